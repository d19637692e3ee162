"""Benchmark data sets for structured prediction.

Three kinds of entry points:

- **readers** -- pure functions of a path, for files you already have:
  :func:`read_label_ranking_csv`, :func:`read_arff_multilabel`,
  :func:`read_chu_ghahramani`, :func:`read_wine_quality`,
  :func:`read_conll_columns`, :func:`read_conll2002`, :func:`read_conllu`
  (and :func:`write_conllu`; :func:`conllu_targets` gives a parser's
  targets and :func:`with_predictions` the sentences carrying its
  predicted trees);
- **fetchers** -- download-and-cache with SHA-256 verification:
  :func:`fetch_label_ranking`, :func:`fetch_mulan`,
  :func:`fetch_chu_ghahramani`, :func:`fetch_conll2000`,
  :func:`fetch_conll2002` (research use only, never shipped),
  :func:`fetch_ud_treebank` (cache folder: :func:`get_data_home`);
- **bundled loaders** -- small redistributable data shipped with the package,
  no network needed: :func:`load_wine_quality`, :func:`load_label_ranking`,
  :func:`load_ewt_constructions`, :func:`load_ewt`, :func:`load_ewt_pos`.

Conventions: label rankings are rank vectors (``Y[i, j]`` = rank of label
``j``, 1 = best); multilabel targets are 0/1 indicator matrices; ordinal
targets are integer labels; sequence targets are lists (one per sentence)
of label lists; dependency heads are 1-based with 0 = root.
"""

from ._base import ChecksumError, get_data_home
from ._bundled import (
    load_ewt,
    load_ewt_constructions,
    load_ewt_pos,
    load_label_ranking,
    load_wine_quality,
    pos_token_features,
)
from ._fetchers import (
    fetch_chu_ghahramani,
    fetch_conll2000,
    fetch_conll2002,
    fetch_label_ranking,
    fetch_mulan,
    fetch_ud_treebank,
    list_chu_ghahramani_datasets,
    list_label_ranking_datasets,
    list_mulan_datasets,
)
from ._conll import read_conll2002, read_conll_columns
from ._conllu import (ConlluSentence, conllu_targets, read_conllu, with_predictions,
                      write_conllu)
from ._label_ranking import read_label_ranking_csv
from ._multilabel import read_arff_multilabel
from ._ordinal import read_chu_ghahramani, read_wine_quality

__all__ = [
    "ChecksumError",
    "get_data_home",
    "read_label_ranking_csv",
    "read_arff_multilabel",
    "read_chu_ghahramani",
    "read_wine_quality",
    "read_conll_columns",
    "read_conll2002",
    "read_conllu",
    "write_conllu",
    "with_predictions",
    "conllu_targets",
    "ConlluSentence",
    "fetch_label_ranking",
    "fetch_mulan",
    "fetch_chu_ghahramani",
    "list_label_ranking_datasets",
    "list_mulan_datasets",
    "list_chu_ghahramani_datasets",
    "fetch_conll2000",
    "fetch_conll2002",
    "fetch_ud_treebank",
    "load_wine_quality",
    "load_label_ranking",
    "load_ewt_constructions",
    "load_ewt",
    "load_ewt_pos",
    "pos_token_features",
]
