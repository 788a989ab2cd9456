"""A finding's related locations (the launch line, a config line) survive the results cache,
and entries without them keep their old shape."""

from __future__ import annotations

import json

import pytest

from lintlora.cache import decode_result, encode_result
from lintlora.engine import FileResult
from lintlora.findings import Finding, RelatedLocation, Severity
from lintlora.training_setup import Span


def _result(related=()):
    r = FileResult("/proj/train.py", "python")
    r.findings.append(Finding("LL024", "sharded-qlora-quant-storage", Severity.ERROR, Span("/proj/train.py", 5, 7),
                              "message", fix="fix", related=related))
    return r


def test_related_locations_round_trip():
    related = (RelatedLocation(Span("/proj/run.sh", 3), "launched by run.sh:3 with 4 processes"),
               RelatedLocation(Span("/proj/fsdp.yaml", 5, 27, 5, 37), "sharded by FSDP1 FULL_SHARD"))
    encoded = json.loads(json.dumps(encode_result(_result(related))))
    others = ("/proj/run.sh", "/proj/fsdp.yaml")  # the run's inputs: the cache passes them
    assert decode_result(encoded, other_paths=others).findings[0].related == related
    with pytest.raises(ValueError, match="another file's path"):  # not an input: refused
        decode_result(encoded, other_paths=others[:1])


def test_no_related_locations_round_trip_empty():
    encoded = encode_result(_result())
    assert encoded["findings"][0]["related"] == []  # cache FORMAT 4 on: the key is always written
    assert decode_result(json.loads(json.dumps(encoded))).findings[0].related == ()


def test_a_malformed_related_entry_is_refused():
    encoded = json.loads(json.dumps(encode_result(_result((RelatedLocation(Span("/proj/run.sh", 3), "x"),)))))
    encoded["findings"][0]["related"] = [[["/proj/run.sh", 0, 1, None, None, None], "x"]]
    with pytest.raises(ValueError, match="not a lintlora cache entry"):
        decode_result(encoded)
