"""The local store: what specdec keeps on this machine, written whole or not at all, checked when read, and the progress
of long jobs.

Every layer keeps something on disk (the zoo its checkpoints and converted copies, heads their
checkpoints, the benchmark its tables, the W8A8 gate its verdict), and every one of them needs the same
four things, written once here:

- `folders`: where the store is (`cache_dir`), a file written beside its name and renamed into place
  (`write_file`, `write_text`), and a whole folder built aside and swapped in (`new_folder`, `settle`);
- `kept`: a JSON file of kept verdicts, read, changed and written back under a lock (`update_json`);
- `manifest`: one manifest format (each file's size and SHA-256) with stamps, so that an unchanged file is
  not hashed again (`write_manifest`, `check_folder`, `file_sha256`);
- `wheels`: a data file taken out of a pinned wheel of the package index, never installed (`copy_member`);
- `progress`: one `Progress` type with the time left, a `Reporter` that times stages, and the one check of
  a run's minutes and steps (`check_run_length`).

The store imports nothing of specdec but `specdec.errors`, and neither torch nor transformers, so that
every layer may use it (the layers contract in pyproject.toml puts it just above the errors).
Not handled here: what the files mean (the zoo, heads, kernels and benchmark modules say).
"""

from specdec.store.folders import cache_dir, new_folder, settle, write_file, write_text
from specdec.store.kept import read_json, update_json
from specdec.store.manifest import MANIFEST, VERIFIED, check_folder, file_sha256, read_manifest, write_manifest
from specdec.store.progress import Count, Progress, Reporter, about, check_run_length, seconds_left
from specdec.store.wheels import WheelMember, copy_member, find_wheel, pip_args_from_env, pip_download

__all__ = [
    "MANIFEST",
    "VERIFIED",
    "Count",
    "Progress",
    "Reporter",
    "WheelMember",
    "about",
    "cache_dir",
    "check_folder",
    "check_run_length",
    "copy_member",
    "file_sha256",
    "find_wheel",
    "new_folder",
    "pip_args_from_env",
    "pip_download",
    "read_json",
    "read_manifest",
    "seconds_left",
    "settle",
    "update_json",
    "write_file",
    "write_manifest",
    "write_text",
]
