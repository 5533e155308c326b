"""Damage a copy of a real recording the way broken recorders and disks do, row by row.

Every helper edits the SQLite file in place (as a hand-edited or damaged file would look) and
works on positions in ``(ts, id)`` order, i.e. frame indices for ``color_image``.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from pathlib import Path

from eval_assets.recording import Recording
from eval_assets.recording.codecs import encode_blob
from eval_assets.recording.messages import CameraInfo


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


def freeze_images(db: Path, positions: range | list[int], source: int) -> list[int]:
    """A frozen camera: frames ``positions`` carry frame ``source``'s payload byte for byte
    (their rows, stamps and TF untouched). Returns the row ids changed."""
    with Recording.open(db) as rec:
        rows = [rec.row_id("color_image", p) for p in positions]
        origin = rec.row_id("color_image", source)
    _execute(db, *(('UPDATE "color_image_blob" SET data = (SELECT data FROM '
                    '"color_image_blob" WHERE id = ?) WHERE id = ?', (origin, row))
                   for row in rows))
    return rows


def edit_calibration(db: Path, first: int, edit: Callable[[CameraInfo], CameraInfo]
                     ) -> list[int]:
    """Calibration changing mid-recording: ``camera_info`` rows from position ``first`` on are
    replaced by ``edit`` of themselves. Returns the row ids changed."""
    with Recording.open(db) as rec:
        count = len(rec.timestamps("camera_info"))
        changed = [(rec.row_id("camera_info", j), rec.message("camera_info", j))
                   for j in range(first, count)]
    _execute(db, *(('UPDATE "camera_info_blob" SET data = ? WHERE id = ?',
                    (encode_blob(edit(info), "lcm"), row)) for row, info in changed))
    return [row for row, _ in changed]


def scale_intrinsics(db: Path, first: int, factor: float) -> list[int]:
    """:func:`edit_calibration` multiplying fx and fy (in K and P) by ``factor``."""
    def scaled(info: CameraInfo) -> CameraInfo:
        k, p = list(info.K), list(info.P)
        k[0], k[4], p[0], p[5] = k[0] * factor, k[4] * factor, p[0] * factor, p[5] * factor
        return dataclasses.replace(info, K=tuple(k), P=tuple(p))

    return edit_calibration(db, first, scaled)


def freeze_tf(db: Path, child: str, since: float, until: float) -> list[int]:
    """A stuck pose source: every ``tf`` sample of the edge to ``child`` stamped in
    [``since``, ``until``] repeats the first such sample's transform (stamps untouched). Returns
    the row ids changed."""
    with Recording.open(db) as rec:
        ts = rec.timestamps("tf")
        rows = [(rec.row_id("tf", j), rec.message("tf", j)) for j in range(len(ts))
                if since <= ts[j] <= until]
    rows = [(row, msg) for row, msg in rows if msg.transforms[0].child_frame_id == child]
    held = rows[0][1].transforms[0].transform
    statements = []
    for row, msg in rows:
        edge = dataclasses.replace(msg.transforms[0], transform=held)
        statements.append(('UPDATE "tf_blob" SET data = ? WHERE id = ?',
                           (encode_blob(dataclasses.replace(msg, transforms=(edge,)), "lcm"),
                            row)))
    _execute(db, *statements)
    return [row for row, _ in rows]
