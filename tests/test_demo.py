"""The README's first command: ``python -m structlearn.demo``."""

import pytest

from structlearn import demo


def test_demo_quick_prints_a_comparison_table(capsys):
    assert demo.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for text in ["label ranking", "ordinal", "multilabel", "tagging", "parsing", "Kendall tau",
                 "MAE", "Hamming loss", "token accuracy", "UAS", "projection", "crf",
                 "perceptron", "fit time"]:
        assert text in out
    # every row of the table carries a finite metric value
    rows = [line.split() for line in out.splitlines()
            if line.startswith(("label ranking", "ordinal", "multilabel", "tagging",
                                 "parsing"))]
    assert len(rows) >= 16
    tagging = {r[2]: float(r[-2]) for r in rows if r[0] == "tagging"}
    # the structured taggers beat the most-frequent-tag baseline by far
    assert tagging["crf"] > tagging["most"] + 0.05
    assert tagging["perceptron"] > tagging["most"] + 0.05
    parsing = {r[2]: float(r[-2]) for r in rows if r[0] == "parsing"}
    assert parsing["crf"] > parsing["left"] + 0.5
    assert parsing["perceptron"] > parsing["left"] + 0.5
    for r in rows:
        float(r[-2])


def test_demo_help_exits_cleanly(capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(["--help"])
    assert exc.value.code == 0
    assert "--quick" in capsys.readouterr().out


@pytest.mark.slow
def test_readme_example_runs_and_prints_what_its_comments_say(capsys):
    """The README's example block runs as written; each printed number is near
    the value its comment announces (the values depend on the bundled data
    and fixed folds only, up to solver rounding)."""
    import ast
    import re
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
