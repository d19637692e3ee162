"""The README's first command: ``python -m structlearn.demo``."""

import re
import sys

import pytest

from structlearn import demo
from structlearn.datasets import ConlluSentence, load_ewt

# metric -> (task, smallest and largest possible value)
METRIC_RANGE = {"Kendall tau": ("label ranking", -1.0, 1.0), "MAE": ("ordinal", 0.0, 5.0),
                "Hamming loss": ("multilabel", 0.0, 1.0),
                "token accuracy": ("tagging", 0.0, 1.0),
                "chunk F1": ("segmentation", 0.0, 1.0), "UAS": ("parsing", 0.0, 1.0)}


class _RecordingStream:
    """A stdout that records what is written and when it is flushed."""

    def __init__(self):
        self.events = []

    def write(self, text):
        self.events.append(("write", text))
        return len(text)

    def flush(self):
        self.events.append(("flush", None))

    def text(self):
        return "".join(t for kind, t in self.events if kind == "write")


def _expected_models(cfg):
    """(task, model) of every line a run of configuration ``cfg`` prints, in order."""
    out = []
    for name in cfg["ranking_sets"]:
        out += [("label ranking", "ridge on ranks (sklearn)")]
        out += [("label ranking", demo._loss_label(loss, kw))
                for loss, kw in cfg["ranking_losses"]]
    for task, baseline, key in [
            ("ordinal", "multinomial logistic (sklearn)", "ordinal_losses"),
            ("multilabel", "one-vs-rest logistic (sklearn)", "multilabel_losses"),
            ("tagging", "most frequent tag per word", "tagging_losses"),
            ("segmentation", "most frequent tag per word", "segmentation_losses"),
            ("parsing", "left neighbour", "parsing_losses")]:
        out += [(task, baseline)] + [(task, loss) for loss in cfg[key]]
    return out


def _result_lines(text):
    """The per-model lines printed before the final table, as 6 cells each."""
    streamed = text.split("\nComparison")[0]
    rows = []
    for line in streamed.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 6 and cells[3] in METRIC_RANGE:
            rows.append(cells)
    return rows


def _check_run(text, cfg):
    """Every model has one streamed line, in order, with a metric in range, and
    the same line in the final comparison table."""
    assert text.startswith("structlearn demo")
    rows = _result_lines(text)
    assert [(r[0], r[2]) for r in rows] == _expected_models(cfg)
    values = {}
    for task, data, model, metric, value, seconds in rows:
        want_task, low, high = METRIC_RANGE[metric]
        assert task == want_task
        assert low <= float(value) <= high, (task, model, value)
        assert float(seconds) >= 0.0
        values[(task, model)] = float(value)
    table = text.split("\nComparison")[1]
    for task, data, model, metric, value, seconds in rows:
        assert re.search(rf"^{re.escape(task)}\s+{re.escape(data)}\s+{re.escape(model)}"
                         rf"( \*)?\s+{re.escape(metric)}\s+{value}\s+(baseline|[+-]\d\.\d{{4}})"
                         rf"\s+{re.escape(seconds)}$", table, re.M), (task, model)
    assert re.search(r"^total \d+\.\d s wall", text, re.M)
    return values


def _left_neighbour_uas(sentences):
    """Independent count: the fraction of words whose head is the word before."""
    heads = [h for s in sentences for h in s.heads]
    hits = sum(h == i for s in sentences for i, h in enumerate(s.heads))
    return hits / len(heads)


def test_tiny_run_prints_a_line_per_model_as_it_goes(monkeypatch):
    stream = _RecordingStream()
    monkeypatch.setattr(sys, "stdout", stream)
    assert demo.main(["--tiny"]) == 0
    monkeypatch.undo()
    text = stream.text()
    values = _check_run(text, demo.CONFIGS["tiny"])
    # every result line is flushed as soon as it is written (not at the end)
    n_flushed = 0
    for k, (kind, chunk) in enumerate(stream.events):
        if kind == "write" and _result_lines(chunk):
            assert ("flush", None) in stream.events[k + 1:k + 3], chunk
            n_flushed += 1
    assert n_flushed == len(values)
    # the baselines are what they say (independent computation)
    tiny = demo.CONFIGS["tiny"]
    test = load_ewt("test")[:tiny["seq_test"]]
    assert values[("parsing", "left neighbour")] == pytest.approx(
        _left_neighbour_uas(test), abs=5e-5)
    # even on 60 sentences the structured models are far above the baselines
    assert values[("parsing", "perceptron")] > values[("parsing", "left neighbour")] + 0.3
    assert values[("parsing", "crf")] > values[("parsing", "left neighbour")] + 0.3
    base = values[("segmentation", "most frequent tag per word")]
    assert values[("segmentation", "crf")] > base + 0.1
    assert values[("segmentation", "perceptron")] > base + 0.1
    base = values[("tagging", "most frequent tag per word")]
    assert values[("tagging", "crf")] > base
    assert values[("tagging", "perceptron")] > base


def test_one_task_only(capsys):
    assert demo.main(["--tiny", "--task", "ordinal"]) == 0
    rows = _result_lines(capsys.readouterr().out)
    assert [r[0] for r in rows] == ["ordinal"] * (1 + len(demo.CONFIGS["tiny"]
                                                          ["ordinal_losses"]))


def test_noun_phrase_rule_on_a_hand_made_tree():
    # "My sister 's old friend John Smith saw the big two dogs ."
    words = [("My", "PRON", 2, "nmod:poss"), ("sister", "NOUN", 5, "nmod:poss"),
             ("'s", "PART", 2, "case"), ("old", "ADJ", 5, "amod"),
             ("friend", "NOUN", 8, "nsubj"), ("John", "PROPN", 5, "appos"),
             ("Smith", "PROPN", 6, "flat"), ("saw", "VERB", 0, "root"),
             ("the", "DET", 12, "det"), ("big", "ADJ", 12, "amod"),
             ("two", "NUM", 12, "nummod"), ("dogs", "NOUN", 8, "obj"),
             (".", "PUNCT", 8, "punct")]
    sentence = ConlluSentence([{"id": i + 1, "form": w, "upos": u, "head": h, "deprel": d}
                               for i, (w, u, h, d) in enumerate(words)])
    assert demo._noun_phrase_tags(sentence) == [
        "B-NP", "I-NP", "O", "B-NP", "I-NP", "B-NP", "I-NP", "O",
        "B-NP", "I-NP", "I-NP", "I-NP", "O"]


def test_noun_phrases_of_the_bundled_slice_are_well_formed():
    for sentence in load_ewt("test")[:100]:
        tags = demo._noun_phrase_tags(sentence)
        assert len(tags) == len(sentence)
        for i, tag in enumerate(tags):
            assert tag in ("O", "B-NP", "I-NP")
            if tag == "I-NP":
                assert tags[i - 1] in ("B-NP", "I-NP")
        # every phrase holds a noun, a proper noun or a pronoun
        starts = [i for i, tag in enumerate(tags) if tag == "B-NP"] + [len(tags)]
        for a, b in zip(starts[:-1], starts[1:]):
            end = a + 1
            while end < b and tags[end] == "I-NP":
                end += 1
            assert {"NOUN", "PROPN", "PRON"} & set(sentence.upos[a:end])


def test_demo_help_lists_the_run_sizes(capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "--full" in out and "--tiny" not in out


def test_sizes_are_exclusive(capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(["--quick", "--full"])
    assert exc.value.code == 2


@pytest.mark.slow
def test_default_run_the_readme_command(capsys):
    """README command 1 at its real size: every family, the structured models
    well above the baselines."""
    assert demo.main([]) == 0
    values = _check_run(capsys.readouterr().out, demo.CONFIGS["default"])
    assert values[("tagging", "crf")] > values[("tagging", "most frequent tag per word")] + 0.05
    assert (values[("tagging", "perceptron")]
            > values[("tagging", "most frequent tag per word")] + 0.05)
    base = values[("segmentation", "most frequent tag per word")]
    assert values[("segmentation", "crf")] > base + 0.2
    assert values[("segmentation", "perceptron")] > base + 0.2
    assert values[("parsing", "crf")] > values[("parsing", "left neighbour")] + 0.5
    assert values[("parsing", "perceptron")] > values[("parsing", "left neighbour")] + 0.5
    # the fixed-size tasks stay near their scikit-learn baselines
    for task, baseline in [("ordinal", "multinomial logistic (sklearn)"),
                           ("multilabel", "one-vs-rest logistic (sklearn)")]:
        for (t, model), value in values.items():
            if t == task:
                assert abs(value - values[(task, baseline)]) < 0.1, (task, model)


@pytest.mark.slow
def test_readme_example_runs_and_prints_what_its_comments_say(capsys):
    """The README's example block runs as written; each printed number is near
    the value its comment announces (the values depend on the bundled data
    and fixed folds only, up to solver rounding)."""
    import ast
    from pathlib import Path

    readme = Path(__file__).resolve().parents[1] / "README.md"
    if not readme.exists():  # pragma: no cover - installed without sources
        pytest.skip("README.md is not beside the tests")
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert len(blocks) == 1
    code = blocks[0]
    announced = [float(m) for m in re.findall(r"#[^\n]*?(-?\d+\.\d+)\s*$", code, re.M)]
    assert len(announced) == 5
    ast.parse(code)
    exec(compile(code, str(readme), "exec"), {"__name__": "readme"})
    printed = [float(re.findall(r"-?\d+\.\d+", line)[-1])
               for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(printed) == 5
    for got, said in zip(printed, announced):
        assert got == pytest.approx(said, abs=0.015)
