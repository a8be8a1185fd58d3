"""Splitting an Inspect log into records: one per sample, one per reduced score, one for the log.

* ``.eval``: a zip archive (``archive.py``). A sample is the member
  ``samples/<id>_epoch_<n>.json`` (its locator is the member's name); the log is
  ``header.json`` (``_journal/start.json`` in a log whose run never finished); a reduced
  score is ``reductions.json[i].samples[j]``.
* ``.json``: one object; a sample is ``.samples[i]``, a reduced score
  ``.reductions[i].samples[j]``, the log the object without them (locator empty).

Every sample record carries the log's eval spec (``eval_id``, ``run_id``, ``task``,
``model``) in its envelope, so the spec is read once and no row repeats more of it
than these ids. The log's own record comes last (a streamed ``.json`` log holds its
reductions after its samples). A file of another shape, forced with ``--format inspect``,
is one quarantined record naming the shape expected.

Inspect's indexes of its own members are not records: ``summaries.json`` and
``_journal/summaries/<n>.json`` (each sample's summary: its id, epoch, scores and
metadata with long values cut, and counts of its messages, rebuilt from the samples)
and ``_journal/start.json`` beside a ``header.json`` (the same version, spec and plan;
where they differ, the journal's values are kept in ``eval_logs.extra.journal_start``).
Any other member is kept whole in ``eval_logs.extra.members``.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Iterator
from typing import Any

from warehouse.formatkit.readers import BOM, RAW_LIMIT, decode_json
from warehouse.formatkit.records import Record, RecordError
from warehouse.formatkit.source import SourceFile

from ..fields import json_type
from .archive import MemberError, members, open_member, read_member
from .stream import decoded_parts, decoded_reductions, streamed_parts, streamed_reductions

#: the kinds of record, in ``Record.envelope["kind"]``
SAMPLE, REDUCTION, LOG = "sample", "reduction", "log"

ZIP_MAGIC = b"PK\x03\x04"
SHAPE = (
    "an Inspect eval log is a .eval zip archive (header.json, samples/<id>_epoch_<n>.json, reductions.json) "
    "or a .json log, one object {version, status, eval: {task, model, ...}, plan, results, stats, samples: [...]}"
)
HEADER, START = "header.json", "_journal/start.json"
REDUCTIONS = "reductions.json"
_SAMPLE_MEMBER = re.compile(r"samples/[^/]+\.json")
_INDEX_MEMBER = re.compile(r"summaries\.json|_journal/summaries/[^/]+\.json")
#: the keys of a log Inspect writes before its eval spec: what a streamed log may hold before it
_BEFORE_SPEC = ("version", "status")


def log_records(src: SourceFile) -> Iterator[Record]:
    if src.head.startswith(ZIP_MAGIC):
        yield from _archive_records(src)
    else:
        yield from _json_records(src)


def eval_ref(header: Any) -> dict:
    """What each sample's rows carry of the log's eval spec: its ids, task and model (values of
    another type are left out here; the log's own record reports them)."""
    spec = header.get("eval") if isinstance(header, dict) else None
    if not isinstance(spec, dict):
        return {}
    out = {}
    for key in ("eval_id", "run_id", "task", "model"):
        v = spec.get(key)
        if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
            out[key] = str(v)
    return out


def not_a_log(value: Any) -> RecordError:
    if isinstance(value, dict):
        got = f"an object with keys {', '.join(sorted(value)[:8]) or 'none'}"
        if "eval" in value:
            got = f"an object whose eval is {json_type(value['eval'])}, not the eval spec object"
    else:
        got = f"a JSON {json_type(value)}"
    return RecordError(f"not an Inspect eval log: got {got}; {SHAPE}; pass --format to read it as another format")


# --- .json logs ----------------------------------------------------------------------------------------


def _json_records(src: SourceFile) -> Iterator[Record]:
    if src.whole:
        data = src.data().removeprefix(BOM)
        try:
            log = decode_json(data) if data.strip() else None
        except RecordError as e:
            yield Record("", error=RecordError(f"{e.message} ({SHAPE})", stage=e.stage), raw=data[:RAW_LIMIT],
                         raw_size=len(data))
            return
        if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
            yield Record("", error=not_a_log(log) if log is not None else RecordError(f"empty file; {SHAPE}", stage="decode"),
                         raw=data[:RAW_LIMIT], raw_size=len(data))
            return
        yield from _records(decoded_parts(log), _json_places())
        return
    yield from _streamed_json(src)


def _streamed_json(src: SourceFile) -> Iterator[Record]:
    import ijson

    stream = src.stream()
    if src.head.startswith(BOM):
        stream.read(len(BOM))
    parts = _guarded(streamed_parts(ijson.parse(stream, use_float=True)))
    places, header, logged = _json_places(), {}, False
    try:
        for record in _records(parts, places, header):
            logged = (record.envelope or {}).get("kind") == LOG
            yield record
    except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError, ValueError) as e:
        after = f"after {places.last}" if places.last else "at its start"
        yield Record("", error=RecordError(
            f"the log could not be read on {after} ({_reason(e)}); the rest of the file was not read "
            f"(it is streamed, being over the record limit: {SHAPE})", stage="decode"), raw=b"", raw_size=0)
        if not logged and isinstance(header.get("eval"), dict):
            yield Record(places.log, header, envelope={"kind": LOG})  # the header read before the damage


def _guarded(parts: Iterator[tuple]) -> Iterator[tuple]:
    """A streamed log must show it is one before anything large is built: its eval spec comes
    before any other key but the version and the status, as Inspect writes it."""
    spec = False
    for part in parts:
        if not spec and part[0] == "header" and part[1] == "eval":
            spec = isinstance(part[2], dict)
        if not spec and not (part[0] == "header" and part[1] in _BEFORE_SPEC):
            what = f"its key {part[1]!r}" if part[0] == "header" else f"its {part[0]}s"
            raise ValueError(f"{what} before an eval spec object: not an Inspect log, or not written by Inspect")
        yield part


class _Places:
    """How the records of one kind of file are named, and the last one named (for a message)."""

    def __init__(self, log: str, sample: str, reduction: str):
        self.log, self._sample, self._reduction, self.last = log, sample, reduction, ""

    def sample(self, i: int) -> str:
        self.last = self._sample.format(i=i)
        return self.last

    def reduction(self, i: int, j: int | None = None) -> str:
        self.last = self._reduction.format(i=i) + (f".samples[{j}]" if j is not None else "")
        return self.last


def _json_places() -> _Places:
    return _Places("", ".samples[{i}]", ".reductions[{i}]")


def _reason(e: BaseException) -> str:
    text = e.args[0] if e.args else e
    text = text.decode("utf-8", "backslashreplace") if isinstance(text, bytes) else str(text)
    return text.splitlines()[0] if text else type(e).__name__


# --- the records of a log's parts -----------------------------------------------------------------------


def _records(parts: Iterable[tuple], places: _Places, header: dict | None = None, log_envelope: dict | None = None,
             sample_records: Iterable[Record] = (), log: bool = True) -> Iterator[Record]:
    """Records of a log's parts (``stream.py``), the log's own record last (``log``). ``header``:
    the log's header when it was read apart from the parts (a ``.eval``'s member), whose samples
    are ``sample_records``."""
    header = {} if header is None else header
    ref: dict | None = None  # the spec's ids, once every key before the samples is read

    def spec() -> dict:
        nonlocal ref
        if ref is None:
            ref = eval_ref(header)
        return ref

    for record in sample_records:
        record.envelope = {"kind": SAMPLE, "eval": spec()}
        yield record
    left: list = []  # keys of reductions no reduced score carries
    envelope = None
    for part in parts:
        kind = part[0]
        if kind == "header":
            header[part[1]] = part[2]
        elif kind == "sample":
            envelope = envelope or {"kind": SAMPLE, "eval": spec()}
            yield Record(places.sample(part[1]), part[2], index=part[1], envelope=envelope)
        elif kind == "reduction":
            _, i, j, head, item = part
            yield Record(places.reduction(i, j), item, envelope={"kind": REDUCTION, "eval": spec(), "head": head})
        elif kind == "reductions_left":
            left.append(part[2])
        elif kind == "bad_reduction":
            yield Record(places.reduction(part[1]), part[2], error=RecordError(
                f"a reduction (one scorer's scores of the samples over their epochs) must be an object "
                f"{{scorer, reducer, samples: [...]}}, got {json_type(part[2])}"))
        else:  # bad_member: the reductions member could not be read on
            yield Record(part[1], error=part[2], raw=b"", raw_size=0)
    if log:
        envelope = dict(log_envelope or {}, kind=LOG)
        if left:
            envelope["reductions"] = left
        places.last = places.log
        yield Record(places.log, header, envelope=envelope)


# --- .eval archives -------------------------------------------------------------------------------------


def _archive_records(src: SourceFile) -> Iterator[Record]:
    try:
        archive = zipfile.ZipFile(src.seekable())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        yield Record("", error=RecordError(
            f"not a readable zip archive ({_reason(e)}): {SHAPE}; an archive cut short (a copy that stopped, "
            "a run killed while writing it) cannot be read", stage="decode"),
            raw=src.head[:RAW_LIMIT], raw_size=src.size)
        return
    with archive:
        yield from _archive(archive, src.max_record_bytes)


def _archive(archive: zipfile.ZipFile, limit: int) -> Iterator[Record]:
    infos = members(archive)
    by_name = {info.filename: info for info in infos}
    samples = [info for info in infos if _SAMPLE_MEMBER.fullmatch(info.filename)]
    found = by_name.get(HEADER) or by_name.get(START)
    if found is None and not samples:
        names = ", ".join(i.filename for i in infos[:8]) or "none"
        yield Record("", error=RecordError(
            f"not an Inspect eval log: the zip archive holds no header.json, _journal/start.json or "
            f"samples/*.json (its members: {names}); {SHAPE}; pass --format to read it as another format"))
        return
    header: dict | None = None
    bad_header: Record | None = None
    if found is not None:
        member = _member(archive, found, limit)
        if member.error is None and not isinstance(member.value, dict):
            member.error = not_a_log(member.value)
        if member.error is None:
            header = member.value
        else:
            bad_header = member
    log_envelope: dict = {"member": found.filename if found else None}
    if found is not None and found.filename == HEADER and START in by_name:
        start = _member(archive, by_name[START], limit)
        if start.error is not None:
            yield start
        elif header is not None:
            differs = _differs(start.value, header)
            if differs:
                log_envelope["journal_start"] = differs
    others = {}
    for info in infos:
        name = info.filename
        if info is found or name in (START, REDUCTIONS) or _SAMPLE_MEMBER.fullmatch(name) or _INDEX_MEMBER.fullmatch(name):
            continue
        member = _member(archive, info, limit)
        if member.error is not None:
            yield member
        else:
            others[name] = member.value
    if others:
        log_envelope["members"] = others

    places = _Places(found.filename if found else "", "", REDUCTIONS + "[{i}]")

    def sample_records() -> Iterator[Record]:
        for n, info in enumerate(samples):
            record = _member(archive, info, limit)
            record.index = n
            yield record

    reductions = by_name.get(REDUCTIONS)
    parts = _reduction_parts(archive, reductions, limit) if reductions is not None else iter(())
    yield from _records(parts, places, header, log_envelope, sample_records(), log=header is not None)
    if bad_header is not None:
        yield bad_header
    elif header is None:
        yield Record("", error=RecordError(
            "the archive holds samples but no header.json or _journal/start.json: the log's eval spec "
            f"(task, model, ids) is not in it, and its samples are ingested without it; {SHAPE}"))


def _reduction_parts(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> Iterator[tuple]:
    """The parts of ``reductions.json``: read whole up to the record limit, streamed beyond it."""
    at = REDUCTIONS
    try:
        data = read_member(archive, info, limit)
        if data is not None:
            elements = decode_json(data.removeprefix(BOM))
            if not isinstance(elements, list):
                raise RecordError(f"expected a JSON array of reductions, got {json_type(elements)}")
            yield from decoded_reductions(elements)
            return
        import ijson

        with open_member(archive, info) as f:
            events = ijson.parse(f, use_float=True)
            first = next(events, ("", "end", None))
            if first[1] != "start_array":
                raise RecordError("expected a JSON array of reductions (it is streamed, being over the record limit)")
            for part in streamed_reductions(events):
                at = f"{REDUCTIONS}[{part[1]}]"
                yield part
    except RecordError as e:
        yield ("bad_member", at, e)
    except Exception as e:  # noqa: BLE001 - a damaged member (MemberError), ijson's and the decoder's errors alike
        yield ("bad_member", at, RecordError(f"{REDUCTIONS} could not be read on from here ({_reason(e)})", stage="decode"))


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> Record:
    """The member as a record at its name: its JSON, or the reason it cannot be read."""
    name = info.filename
    try:
        data = read_member(archive, info, limit)
    except MemberError as e:
        return Record(name, error=RecordError(f"the member {name} cannot be read: {e}", stage="read"), raw=b"", raw_size=0)
    if data is None:
        return Record(name, error=RecordError(
            f"the member {name} is {info.file_size} bytes, over the {limit}-byte record limit; "
            "raise --max-record-mb to read it", stage="read"), raw=b"", raw_size=info.file_size)
    data = data.removeprefix(BOM)
    try:
        return Record(name, decode_json(data))
    except RecordError as e:
        return Record(name, error=e, raw=data[:RAW_LIMIT], raw_size=len(data))


def _differs(start: Any, header: dict) -> Any:
    """The keys of the journal's start record whose values the header does not hold as they are."""
    if not isinstance(start, dict):
        return start
    return {k: v for k, v in start.items() if header.get(k) != v} or None
