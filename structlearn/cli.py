"""The ``structlearn`` command line: train, predict and evaluate on CoNLL files.

::

    structlearn train tagger train.txt --model chunker.joblib --constraints BIO
    structlearn predict chunker.joblib test.txt --output pred.txt
    structlearn evaluate test.txt pred.txt
    structlearn precompile

``train`` fits a :class:`~structlearn.SequenceTagger` (``tagger``), a
:class:`~structlearn.SegmentTagger` (``segmenter``) or a
:class:`~structlearn.DependencyParser` (``parser``) on a CoNLL column file
(one token per line, the word first, the label last, a blank line between
sentences) or a CoNLL-U file, and saves it with joblib; ``predict`` writes
the input back with the predictions (a column appended to a column file;
the tag, or HEAD and DEPREL with DEPS cleared, in CoNLL-U); ``evaluate``
compares a prediction file with the gold one (token accuracy, span
precision / recall / F1 per type, UAS / LAS).  Progress goes to stderr,
results to stdout.  ``precompile`` compiles the kernels ahead of the first
fit (:func:`structlearn.precompile`).  The same is ``python -m structlearn``.
"""

import argparse
import contextlib
import copy
import sys
import time

import joblib

from . import __version__

TASKS = ("tagger", "segmenter", "parser")
FORMATS = ("auto", "conll", "conllu")
_MODEL_KEY = "structlearn-cli-model"


class CLIError(ValueError):
    """A usage error reported as ``structlearn: error: ...`` (exit status 2)."""


def _progress(args, msg):
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------- input
def _detect_format(path, fmt):
    """'conll' or 'conllu': ``fmt``, or sniffed from the name and the first
    token line (CoNLL-U has 10 tab-separated fields and an integer ID)."""
    if fmt != "auto":
        return fmt
    name = str(path)
    if name.endswith((".conllu", ".conllu.gz")):
        return "conllu"
    from .datasets._conll import _text_lines

    with _text_lines(path) as (_, fh):
        for line in fh:
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            return "conllu" if len(fields) == 10 and fields[0].split("-")[0].split(".")[0] \
                .isdigit() else "conll"
    return "conll"


def _read_columns(path):
    from .datasets import read_conll_columns

    sents = read_conll_columns(path)
    if not sents:
        raise CLIError(f"{path}: no sentence found.")
    return sents


def _read_conllu(path):
    from .datasets import read_conllu

    sents = read_conllu(path)
    if not sents:
        raise CLIError(f"{path}: no sentence found.")
    return sents


def _tag_features(rows, template):
    from .feature_extraction import column_features

    return column_features(rows, template)


# ------------------------------------------------------------------- train
def _estimator(args):
    from . import DependencyParser, SegmentTagger, SequenceTagger

    params = {"loss": args.loss, "solver": args.solver, "n_jobs": args.n_jobs,
              "random_state": args.random_state, "verbose": args.verbose}
    if args.alpha is not None:
        params["alpha"] = args.alpha
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    if args.task == "tagger":
        return SequenceTagger(constraints=args.constraints, l1_ratio=args.l1_ratio, **params)
    if args.l1_ratio:
        raise CLIError(f"--l1-ratio applies to the tagger only, not the {args.task}.")
    if args.constraints is not None:
        raise CLIError(f"--constraints applies to the tagger only (the {args.task} "
                       f"decodes valid structures by construction).")
    if args.task == "segmenter":
        return SegmentTagger(**params)
    return DependencyParser(**params)


def _training_data(args, fmt):
    """``(X, y, meta)`` of the training file for ``args.task``."""
    meta = {"format": fmt, "template": args.template}
    if args.task == "parser":
        if fmt != "conllu":
            raise CLIError("the parser trains on CoNLL-U files (HEAD and DEPREL columns).")
        from .datasets import conllu_targets

        sents = _read_conllu(args.train)
        meta["labelled"] = not args.unlabelled
        return sents, conllu_targets(sents, labelled=meta["labelled"]), meta
    if fmt == "conllu":
        if args.task == "segmenter":
            raise CLIError("the segmenter trains on CoNLL column files with chunk tags "
                           "in the last column (BIO, IOB1 or BIOES).")
        sents = _read_conllu(args.train)
        meta["field"] = args.tag_field
        X = [_tag_features([(t["form"],) for t in s.tokens], args.template) for s in sents]
        # a missing tag ('_') is an unknown label: the tagger trains on the rest
        y = [[t[args.tag_field] for t in s.tokens] for s in sents]
        return X, y, meta
    sents = _read_columns(args.train)
    width = len(sents[0][0])
    if width < 2:
        raise CLIError(f"{args.train}: a training column file needs the word and the "
                       f"label (last column); its lines have {width} column.")
    meta["n_columns"] = width - 1
    X = [_tag_features([row[:-1] for row in s], args.template) for s in sents]
    y = [[row[-1] for row in s] for s in sents]
    return X, y, meta


def cmd_train(args):
    fmt = _detect_format(args.train, args.format)
    t0 = time.perf_counter()
    _progress(args, f"reading {args.train} ({fmt}) ...")
    X, y, meta = _training_data(args, fmt)
    n_tok = sum(len(s) for s in X)
    _progress(args, f"  {len(X)} sentences, {n_tok} tokens ({time.perf_counter() - t0:.1f}s)")
    est = _estimator(args)
    _progress(args, f"training {type(est).__name__}(loss={est.loss!r}) "
                    f"(the first fit compiles the kernels it uses) ...")
    t1 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # the estimator's verbose output
        est.fit(X, y)
    _progress(args, f"  trained in {time.perf_counter() - t1:.1f}s "
                    f"(solver={est.solver_}, {est.n_iter_} iterations)")
    model = {_MODEL_KEY: 1, "version": __version__, "task": args.task, **meta,
             "estimator": est}
    joblib.dump(model, args.model, compress=3)
    _progress(args, f"saved the model to {args.model}")
    return 0


# ----------------------------------------------------------------- predict
def load_model(path):
    """The model dict a ``structlearn train`` saved (a ValueError otherwise)."""
    try:
        model = joblib.load(path)
    except (OSError, EOFError) as e:
        raise CLIError(f"{path}: cannot read the model ({e}).") from None
    except Exception as e:  # noqa: BLE001 - unpickling errors of any kind
        raise CLIError(f"{path}: not a structlearn model file ({type(e).__name__}: "
                       f"{e}).") from None
    if not isinstance(model, dict) or model.get(_MODEL_KEY) != 1:
        raise CLIError(f"{path}: not a model saved by 'structlearn train'.")
    return model


def _write_columns(sents, preds, out):
    for s, p in zip(sents, preds):
        for row, tag in zip(s, p):
            out.write(" ".join(row + (str(tag),)) + "\n")
        out.write("\n")


def cmd_predict(args):
    model = load_model(args.model)
    est, task, fmt_model = model["estimator"], model["task"], model["format"]
    fmt = _detect_format(args.input, args.format)
    if fmt != fmt_model:
        raise CLIError(f"{args.input} is {fmt} but the model was trained on {fmt_model} "
                       f"(pass --format to override the detection).")
    t0 = time.perf_counter()
    from .datasets import write_conllu

    out = sys.stdout if args.output in (None, "-") else open(args.output, "w",
                                                              encoding="utf-8")
    try:
        if fmt == "conllu":
            sents = _read_conllu(args.input)
            _progress(args, f"predicting {len(sents)} sentences with the {task} ...")
            if task == "parser":
                from .datasets import with_predictions

                result = with_predictions(sents, est.predict(sents))
            else:
                X = [_tag_features([(t["form"],) for t in s.tokens], model["template"])
                     for s in sents]
                result = []
                for s, tags in zip(sents, est.predict(X)):
                    s = copy.deepcopy(s)
                    for tok, tag in zip(s.tokens, tags):
                        tok[model["field"]] = tag
                    result.append(s)
            write_conllu(result, out)
        else:
            sents = _read_columns(args.input)
            k = model["n_columns"]
            width = len(sents[0][0])
            if width < k:
                raise CLIError(f"{args.input}: lines have {width} columns; the model reads "
                               f"{k} feature columns.")
            _progress(args, f"predicting {len(sents)} sentences with the {task} ...")
            X = [_tag_features([row[:k] for row in s], model["template"]) for s in sents]
            _write_columns(sents, est.predict(X), out)
    finally:
        if out is not sys.stdout:
            out.close()
    _progress(args, f"  done in {time.perf_counter() - t0:.1f}s"
                    + (f"; wrote {args.output}" if args.output not in (None, "-") else ""))
    return 0


# ---------------------------------------------------------------- evaluate
def _aligned(gold, pred, words_g, words_p, gpath, ppath):
    if len(gold) != len(pred):
        raise CLIError(f"{gpath} has {len(gold)} sentences, {ppath} has {len(pred)}.")
    for i, (a, b) in enumerate(zip(words_g, words_p)):
        if list(a) != list(b):
            raise CLIError(f"sentence {i + 1}: the words of {gpath} and {ppath} differ "
                           f"({len(a)} vs {len(b)} words; first: {list(a)[:3]!r} vs "
                           f"{list(b)[:3]!r}).")


def _is_chunk_tags(seqs):
    tags = {t for s in seqs for t in s}
    return bool(tags) and all(t == "O" or (isinstance(t, str) and len(t) > 2
                                           and t[1] == "-" and t[0] in "BIES")
                              for t in tags)


def _print_chunks(gold, pred, out):
    from .metrics import chunk_precision_recall_f1

    overall, per_type = chunk_precision_recall_f1(gold, pred)
    out.write(f"span precision  {overall['precision']:.4f}\n")
    out.write(f"span recall     {overall['recall']:.4f}\n")
    out.write(f"span F1         {overall['f1']:.4f}\n")
    out.write(f"{'type':<12} {'precision':>9} {'recall':>9} {'F1':>9} {'gold':>7}\n")
    for t, r in per_type.items():
        out.write(f"{t:<12} {r['precision']:>9.4f} {r['recall']:>9.4f} {r['f1']:>9.4f} "
                  f"{r['n_true']:>7}\n")


def cmd_evaluate(args):
    from .metrics import las, token_accuracy, uas

    fmt = _detect_format(args.gold, args.format)
    out = sys.stdout
    if fmt == "conllu":
        gold, pred = _read_conllu(args.gold), _read_conllu(args.pred)
        _aligned(gold, pred, [s.forms for s in gold], [s.forms for s in pred],
                 args.gold, args.pred)
        n = sum(len(s) for s in gold)
        out.write(f"sentences       {len(gold)}\nwords           {n}\n")
        for field in ("upos", "xpos"):
            g = [[t[field] for t in s.tokens] for s in gold]
            p = [[t[field] for t in s.tokens] for s in pred]
            if any(v is not None for s in g for v in s) and \
                    any(v is not None for s in p for v in s):
                acc = token_accuracy([[str(v) for v in s] for s in g],
                                     [[str(v) for v in s] for s in p])
                out.write(f"{field.upper():<15} {acc:.4f}\n")
        if all(h is not None for s in pred for h in s.heads) and \
                all(h is not None for s in gold for h in s.heads):
            gh = [s.heads for s in gold]
            ph = [s.heads for s in pred]
            out.write(f"UAS             {uas(gh, ph):.4f}\n")
            if all(d is not None for s in pred for d in s.deprels):
                score = las(list(zip(gh, [s.deprels for s in gold])),
                            list(zip(ph, [s.deprels for s in pred])))
                out.write(f"LAS             {score:.4f}\n")
        return 0
    gold, pred = _read_columns(args.gold), _read_columns(args.pred)
    _aligned(gold, pred, [[r[0] for r in s] for s in gold], [[r[0] for r in s] for s in pred],
             args.gold, args.pred)
    g = [[r[-1] for r in s] for s in gold]
    p = [[r[-1] for r in s] for s in pred]
    out.write(f"sentences       {len(g)}\ntokens          {sum(map(len, g))}\n")
    out.write(f"token accuracy  {token_accuracy(g, p):.4f}\n")
    if _is_chunk_tags(g):
        _print_chunks(g, p, out)
    return 0


def cmd_precompile(args):
    """``structlearn precompile``: :func:`structlearn.precompile`."""
    from ._precompile import precompile

    losses = args.losses[0] if args.losses in (["default"], ["all"]) else args.losses
    try:
        with contextlib.redirect_stdout(sys.stderr):   # progress goes to stderr
            precompile(args.models, losses, n_jobs=args.n_jobs,
                       verbose=0 if args.quiet else 1)
    except RuntimeError as e:
        print(f"structlearn precompile: error: {e}", file=sys.stderr)
        return 1
    return 0


# -------------------------------------------------------------------- main
def build_parser():
    """The ``argparse`` parser of the command line."""
    from ._precompile import PRECOMPILE_MODELS
    from .feature_extraction import TEMPLATES

    p = argparse.ArgumentParser(
        prog="structlearn",
        description="Train, apply and evaluate structured linear models on CoNLL files.")
    p.add_argument("--version", action="version", version=f"structlearn {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="fit a model on a CoNLL / CoNLL-U file and save it",
                       description="Fit a tagger, segmenter or parser and save it with "
                                   "joblib.")
    t.add_argument("task", choices=TASKS)
    t.add_argument("train", help="training file (CoNLL columns: word first, label last; "
                                 "or CoNLL-U)")
    t.add_argument("--model", required=True, help="where to save the model (joblib)")
    t.add_argument("--format", choices=FORMATS, default="auto")
    t.add_argument("--template", choices=sorted(TEMPLATES), default="default",
                   help="feature templates of the tagger and segmenter: "
                        + "; ".join(f"{k}: {v}" for k, v in TEMPLATES.items()))
    t.add_argument("--tag-field", choices=("upos", "xpos"), default="upos",
                   help="the CoNLL-U column a tagger learns (default: upos)")
    t.add_argument("--loss", default="crf", help="any loss name (default: crf)")
    t.add_argument("--alpha", type=float, default=None,
                   help="L2 penalty of the mean loss (default: the estimator's)")
    t.add_argument("--solver", default="auto",
                   choices=("auto", "lbfgs", "owlqn", "sgd", "bcfw", "cutting-plane"))
    t.add_argument("--l1-ratio", type=float, default=0.0,
                   help="tagger: share of L1 in the penalty (elastic net, OWL-QN; CRFsuite's "
                        "c1); the model keeps the non-zero weights only")
    t.add_argument("--max-iter", type=int, default=None)
    t.add_argument("--n-jobs", type=int, default=None, help="threads")
    t.add_argument("--constraints", default=None,
                   help="tagger: allowed transitions of a scheme (BIO, IOB1, BIOES, BILOU)")
    t.add_argument("--unlabelled", action="store_true",
                   help="parser: heads only (default: heads and DEPREL)")
    t.add_argument("--random-state", type=int, default=0)
    t.add_argument("--verbose", "-v", action="count", default=0)
    t.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    t.set_defaults(func=cmd_train)

    r = sub.add_parser("predict", help="predict with a saved model",
                       description="Write the input back with the model's predictions.")
    r.add_argument("model")
    r.add_argument("input")
    r.add_argument("--output", "-o", default="-", help="output file (default: stdout)")
    r.add_argument("--format", choices=FORMATS, default="auto")
    r.add_argument("--quiet", "-q", action="store_true")
    r.set_defaults(func=cmd_predict)

    e = sub.add_parser("evaluate", help="score predictions against gold annotations",
                       description="Token accuracy and span P/R/F1 per type (column "
                                   "files); UPOS/XPOS accuracy, UAS and LAS (CoNLL-U).")
    e.add_argument("gold")
    e.add_argument("pred")
    e.add_argument("--format", choices=FORMATS, default="auto")
    e.set_defaults(func=cmd_evaluate)

    c = sub.add_parser("precompile", help="compile the kernels ahead of the first fit",
                       description="Compile the Numba kernels of the chosen models into "
                                   "Numba's on-disk cache, in parallel processes, so that "
                                   "no later first fit waits for them "
                                   "(structlearn.precompile).")
    c.add_argument("--models", nargs="+", default=None, metavar="MODEL",
                   help="models to compile (default: all): " + ", ".join(PRECOMPILE_MODELS))
    c.add_argument("--losses", nargs="+", default=["default"], metavar="LOSS",
                   help="'default' (each model's default loss), 'all', or loss names")
    c.add_argument("--n-jobs", type=int, default=None,
                   help="worker processes (default: one per CPU core)")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    c.set_defaults(func=cmd_precompile)
    return p


def main(argv=None):
    """Run the command line; returns the exit status (0; 1 when ``precompile``
    failed for a model; 2 on an error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CLIError, ValueError, TypeError, OSError) as e:
        print(f"structlearn {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
