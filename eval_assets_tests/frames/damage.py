"""Damage a copy of a real recording the way broken recorders and disks do, row by row.

Every helper edits the SQLite file in place (as a hand-edited or damaged file would look) and
works on positions in ``(ts, id)`` order, i.e. frame indices for ``color_image``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from eval_assets.recording import Recording
from eval_assets.recording.codecs import encode_blob


def _row_id(db: Path, stream: str, position: int) -> int:
    with Recording.open(db) as rec:
        return rec.row_id(stream, position)


def _execute(db: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    conn = sqlite3.connect(db)
    try:
        for sql, args in statements:
            conn.execute(sql, args)
        conn.commit()
    finally:
        conn.close()


def undecodable_jpeg(db: Path, position: int) -> int:
    """A well-formed LCM Image whose JPEG bytes are garbage; returns the row id."""
    with Recording.open(db) as rec:
        image = rec.message("color_image", position)
        row_id = rec.row_id("color_image", position)
    broken = type(image)(image.header, image.height, image.width, image.encoding,
                         image.is_bigendian, image.step, b"\xff\xd8" + b"\x00" * 500)
    _execute(db, ('UPDATE "color_image_blob" SET data = ? WHERE id = ?',
                  (encode_blob(broken, "jpeg"), row_id)))
    return row_id


def missing_blob(db: Path, stream: str, position: int) -> int:
    """Delete the payload row of ``stream``'s row at ``position``; returns the row id."""
    row_id = _row_id(db, stream, position)
    _execute(db, (f'DELETE FROM "{stream}_blob" WHERE id = ?', (row_id,)))
    return row_id


def truncated_blob(db: Path, stream: str, position: int) -> int:
    """Cut the payload of ``stream``'s row at ``position`` in half; returns the row id."""
    row_id = _row_id(db, stream, position)
    _execute(db, (f'UPDATE "{stream}_blob" SET data = substr(data, 1, length(data) / 2) '
                  "WHERE id = ?", (row_id,)))
    return row_id


def duplicate_image(db: Path, position: int, payload_from: int | None = None) -> int:
    """Append a ``color_image`` row at the ts of frame ``position``: an identical copy, or the
    payload of frame ``payload_from`` (a different image at the same ts). Returns the new row id,
    which sorts right after the original (frame ``position + 1``; later frames shift by one)."""
    with Recording.open(db) as rec:
        source = rec.row_id("color_image", position)
        payload = rec.row_id("color_image", position if payload_from is None else payload_from)
    conn = sqlite3.connect(db)
    try:
        cur = conn.execute(
            'INSERT INTO "color_image" (ts, value, pose_x, pose_y, pose_z, pose_qx, pose_qy, '
            "pose_qz, pose_qw, tags) SELECT ts, value, pose_x, pose_y, pose_z, pose_qx, pose_qy, "
            'pose_qz, pose_qw, tags FROM "color_image" WHERE id = ?', (source,))
        new_id = cur.lastrowid
        conn.execute('INSERT INTO "color_image_blob" (id, data) SELECT ?, data FROM '
                     '"color_image_blob" WHERE id = ?', (new_id, payload))
        conn.commit()
    finally:
        conn.close()
    assert new_id is not None
    return new_id


def replace_image_data(db: Path, position: int, data: bytes) -> int:
    """Frame ``position``'s Image keeps its header and encoding, with ``data`` as its bytes
    (another format, another size); returns the row id."""
    with Recording.open(db) as rec:
        image = rec.message("color_image", position)
        row_id = rec.row_id("color_image", position)
    replaced = type(image)(image.header, image.height, image.width, image.encoding,
                           image.is_bigendian, image.step, data)
    _execute(db, ('UPDATE "color_image_blob" SET data = ? WHERE id = ?',
                  (encode_blob(replaced, "jpeg"), row_id)))
    return row_id
