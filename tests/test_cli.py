"""The command line end to end on the bundled data: train, predict, evaluate.

Each run goes through ``structlearn.cli.main`` (what the console script and
``python -m structlearn`` call); one test also runs ``python -m structlearn``
in a subprocess.  The scores are recomputed here from the written files
with the library's metrics, so a wrong column, a shifted sentence or a lost
prediction fails.
"""

import subprocess
import sys

import joblib
import pytest

from structlearn.cli import main
from structlearn.datasets import load_ewt, read_conll_columns, read_conllu, write_conllu
from structlearn.metrics import chunk_f1, token_accuracy, uas

NP = {"DET", "ADJ", "NOUN", "PROPN", "NUM"}


def _chunk(upos):
    """Deterministic NP chunks over UPOS: maximal runs of nominal tags."""
    tags, prev = [], False
    for u in upos:
        inside = u in NP
        tags.append(("I-NP" if prev else "B-NP") if inside else "O")
        prev = inside
    return tags


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    train, test = load_ewt("train")[:150], load_ewt("test")[:80]
    for name, sents in (("train", train), ("test", test)):
        with open(d / f"{name}.txt", "w", encoding="utf-8") as f:
            for s in sents:
                for form, upos, tag in zip(s.forms, s.upos, _chunk(s.upos)):
                    f.write(f"{form.replace(' ', '_')} {upos} {tag}\n")
                f.write("\n")
        write_conllu(sents, d / f"{name}.conllu")
    return d


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("task", ["tagger", "segmenter"])
def test_chunking_train_predict_evaluate(task, files, capsys, tmp_path):
    model = tmp_path / f"{task}.joblib"
    extra = ["--constraints", "BIO"] if task == "tagger" else []
    code, out, err = _run(["train", task, files / "train.txt", "--model", model,
                           "--max-iter", 50] + extra, capsys)
    assert code == 0, err
    assert "150 sentences" in err and "trained in" in err and out == ""
    pred = tmp_path / "pred.txt"
    code, out, err = _run(["predict", model, files / "test.txt", "-o", pred], capsys)
    assert code == 0, err
    gold_rows = read_conll_columns(files / "test.txt")
    pred_rows = read_conll_columns(pred)
    # the input columns come back unchanged, the prediction appended
    assert [[r[:3] for r in s] for s in pred_rows] == gold_rows
    g = [[r[2] for r in s] for s in gold_rows]
    p = [[r[3] for r in s] for s in pred_rows]
    f1 = chunk_f1(g, p)
    assert f1 > 0.9, f1
    code, out, err = _run(["evaluate", files / "test.txt", pred], capsys)
    assert code == 0, err
    lines = dict(line.rsplit(None, 1) for line in out.splitlines()
                 if line.startswith(("token accuracy", "span F1")))
    assert float(lines["span F1"]) == pytest.approx(f1, abs=1e-4)
    assert float(lines["token accuracy"]) == pytest.approx(token_accuracy(g, p), abs=1e-4)
    assert "NP" in out  # the per-type table


def test_conllu_tagger_writes_upos(files, capsys, tmp_path):
    model = tmp_path / "pos.joblib"
    assert _run(["train", "tagger", files / "train.conllu", "--model", model,
                 "--max-iter", 30, "--template", "words"], capsys)[0] == 0
    pred = tmp_path / "pred.conllu"
    assert _run(["predict", model, files / "test.conllu", "--output", pred], capsys)[0] == 0
    gold, out = read_conllu(files / "test.conllu"), read_conllu(pred)
    assert [s.forms for s in out] == [s.forms for s in gold]
    assert [s.heads for s in out] == [s.heads for s in gold]   # only UPOS changes
    acc = token_accuracy([s.upos for s in gold], [s.upos for s in out])
    assert acc > 0.8, acc
    code, text, _ = _run(["evaluate", files / "test.conllu", pred], capsys)
    assert code == 0
    line = [x for x in text.splitlines() if x.startswith("UPOS")][0]
    assert float(line.split()[-1]) == pytest.approx(acc, abs=1e-4)


def test_parser_writes_heads_and_deprels_with_deps_cleared(files, capsys, tmp_path):
    from structlearn.metrics import las

    model = tmp_path / "parser.joblib"
    code, _, err = _run(["train", "parser", files / "train.conllu", "--model", model,
                         "--loss", "perceptron", "--max-iter", 10], capsys)
    assert code == 0, err
    saved = joblib.load(model)
    assert saved["task"] == "parser" and saved["labelled"]
    pred = tmp_path / "parsed.conllu"
    assert _run(["predict", model, files / "test.conllu", "-o", pred], capsys)[0] == 0
    gold, out = read_conllu(files / "test.conllu"), read_conllu(pred)
    assert all(t["deps"] is None for s in out for t in s.tokens)
    g = [(s.heads, s.deprels) for s in gold]
    p = [(s.heads, s.deprels) for s in out]
    u, lab = uas([s.heads for s in gold], [s.heads for s in out]), las(g, p)
    assert u > 0.55 and lab > 0.45 and lab <= u
    code, text, _ = _run(["evaluate", files / "test.conllu", pred], capsys)
    scores = {x.split()[0]: float(x.split()[-1]) for x in text.splitlines()
              if x.startswith(("UAS", "LAS"))}
    assert scores["UAS"] == pytest.approx(u, abs=1e-4)
    assert scores["LAS"] == pytest.approx(lab, abs=1e-4)


def test_errors_are_reported_not_raised(files, capsys, tmp_path):
    code, _, err = _run(["predict", files / "train.txt", files / "test.txt"], capsys)
    assert code == 2 and "not a structlearn model file" in err
    code, _, err = _run(["train", "parser", files / "train.txt", "--model",
                         tmp_path / "m"], capsys)
    assert code == 2 and "CoNLL-U" in err
    code, _, err = _run(["train", "segmenter", files / "train.txt", "--model",
                         tmp_path / "m", "--constraints", "BIO"], capsys)
    assert code == 2 and "--constraints applies to the tagger only" in err
    bad = tmp_path / "bad.txt"
    bad.write_text("a B-NP\nb\n\n")
    code, _, err = _run(["train", "tagger", bad, "--model", tmp_path / "m"], capsys)
    assert code == 2 and "bad.txt:2" in err
    other = tmp_path / "other.txt"
    other.write_text("x NN O\n\n")
    code, _, err = _run(["evaluate", files / "test.txt", other], capsys)
    assert code == 2 and "sentences" in err
    with pytest.raises(SystemExit):
        main(["train", "chunker", "x", "--model", "m"])


def test_python_dash_m_runs_the_same_command(files, tmp_path):
    res = subprocess.run([sys.executable, "-m", "structlearn", "evaluate",
                          str(files / "test.txt"), str(files / "test.txt")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "token accuracy  1.0000" in res.stdout and "span F1         1.0000" in res.stdout
