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
