"""The columns of each file, learned from a bounded look at it.

Planning must not read whole files: a json file is judged by its first
``sample_bytes`` (cut after the last whole line), a csv/tsv file by its
header line, a parquet file by its footer. Headerless csv/tsv and text need
no look at all: their table is the ``columns`` list. How each format looks
is its own business (``formats``); here files are sampled side by side and
every type made nullable, since a value missing later is null, not an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from connect_plugin.errors import UnreadableFile
from connect_plugin.scanning.files.files import ScanFile
from connect_plugin.scanning.formats import FileSample
from connect_plugin.scanning.formats.widening import fold_members, nullable_type
from connect_plugin.scanning.request.spec import ScanSpec

SAMPLE_THREADS = 8
"""Files sampled at once; pyarrow's parsers release the GIL, and the work is mostly I/O."""


def needs_sampling(spec: ScanSpec) -> bool:
    """Whether files of this format name their columns (headerless text does not)."""
    return not spec.file_format.headerless


def sample_files(spec: ScanSpec, files: Sequence[ScanFile]) -> list[FileSample]:
    """The sample of every file, in file order; threads overlap the reads."""
    if len(files) <= 1:
        return [sample_file(spec, found) for found in files]
    with ThreadPoolExecutor(max_workers=min(SAMPLE_THREADS, len(files))) as pool:
        return list(pool.map(lambda found: sample_file(spec, found), files))


def sample_file(spec: ScanSpec, scan_file: ScanFile) -> FileSample:
    """One file's columns, every type nullable, struct members that differ only in case
    made one (``names``)."""
    try:
        sample = spec.file_format.sample(scan_file)
    except (OSError, pa.ArrowException) as exc:
        raise UnreadableFile(
            f"cannot read file {scan_file.url} to learn its columns: {exc}"
        ) from exc
    nullable = tuple(pa.field(f.name, nullable_type(fold_members(f.type))) for f in sample.fields)
    return FileSample(nullable, sample.conflicts)
