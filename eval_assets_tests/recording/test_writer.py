"""RecordingWriter: bit-exact round trips, dimOS schema, determinism, atomic writes."""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path

import pytest

from eval_assets.recording import (
    PAYLOAD_MODULES,
    Recording,
    RecordingWriter,
    encode_lcm,
    jpeg_image,
)
from eval_assets.recording.errors import CodecError
from eval_assets.recording.messages import (
    CameraInfo,
    Header,
    Image,
    PointCloud2,
    PointField,
    RegionOfInterest,
    TFMessage,
    Transform,
    TransformStamped,
)
from eval_assets_tests.factories import (
    camera_info,
    frame_rgb,
    make_recording,
    point_cloud,
    wall_points,
)

T = 1_700_000_000.0


def _messages() -> dict[str, list[tuple[float, object]]]:
    """Messages of every type with awkward values (raw bytes with NULs, -0.0, 1/3, extra fields)."""
    jpeg = jpeg_image(frame_rgb(0, 32, 24), Header.at(T, "cam"))
    raw = Image(Header(2, 1, 3, "cam"), 2, 2, "bgr8", 0, 6, bytes(range(12)))
    infos = [
        CameraInfo(
            Header.at(T + i, "cam", seq=i),
            24,
            32,
            model,
            tuple((-1) ** k / 3 * (k + 1) for k in range(n)),
            (797.48, 0.0, 643.54, -0.0, 796.49, 349.28, 0.0, 0.0, 1.0),
            (0.0,) * 9,
            tuple(1 / (k + 1) for k in range(12)),
            1,
            1,
            RegionOfInterest(1, 2, 3, 4, True),
        )
        for i, (model, n) in enumerate(
            [("equidistant", 4), ("plumb_bob", 5), ("rational_polynomial", 8)]
        )
    ]
    # A Mid-360 style cloud: x, y, z, intensity then an extra offset_time (point_step 20).
    fields = (
        *(PointField(n, 4 * k, 7, 1) for k, n in enumerate(("x", "y", "z", "intensity"))),
        PointField("offset_time", 16, 6, 1),
    )
    data = b"".join(struct.pack("<ffffI", k, -k, 0.5, 7.0, 1000 * k) for k in range(3))
    cloud = PointCloud2(Header.at(T, "mid360_link"), 1, 3, fields, False, 20, 60, data, True)
    tf = TFMessage(
        (
            TransformStamped(
                Header.at(T, "world"), "base_link", Transform((1.0, -0.0, 1e-300), (0, 0, 0, 1))
            ),
            TransformStamped(
                Header.at(T, "base_link"), "cam", Transform((0.3, 0, 0.25), (-0.5, 0.5, -0.5, 0.5))
            ),
        )
    )
    return {
        "color_image": [(T, jpeg)],
        "raw_image": [(T, raw)],
        "camera_info": [(T + i, m) for i, m in enumerate(infos)],
        "pointlio_lidar": [(T, cloud)],
        "tf": [(T, tf)],
    }


def _write_all(path: Path) -> dict[str, list[tuple[float, object]]]:
    msgs = _messages()
    with RecordingWriter(path) as w:
        for name, rows in msgs.items():
            first = rows[0][1]
            w.add_stream(name, type(first), "jpeg" if name == "color_image" else "lcm")
            for ts, m in rows:
                w.write(name, ts, m)
    return msgs


def test_every_message_type_round_trips_bit_exactly(tmp_path: Path) -> None:
    msgs = _write_all(tmp_path / "all.db")
    with Recording.open(tmp_path / "all.db") as rec:
        for name, rows in msgs.items():
            got = list(rec.iter_messages(name))
            assert [ts for ts, _ in got] == [ts for ts, _ in rows]
            for (_, want), (_, have) in zip(rows, got, strict=True):
                assert have == want
                assert encode_lcm(have) == encode_lcm(want)  # float64 bits, -0.0 included


def _info_seq(ts: float, seq: int) -> CameraInfo:
    base = camera_info(8, 6, ts)
    return CameraInfo(
        Header.at(ts, "cam", seq=seq),
        base.height,
        base.width,
        base.distortion_model,
        base.D,
        base.K,
        base.R,
        base.P,
    )


def test_rows_are_ordered_by_ts_then_id_even_when_written_out_of_order(tmp_path: Path) -> None:
    path = tmp_path / "mixed.db"
    stamps = [T + 3, T + 1, T + 2, T + 1]  # two rows share T + 1: id breaks the tie
    with RecordingWriter(path) as w:
        w.add_stream("camera_info", CameraInfo, "lcm")
        w.add_stream("color_image", Image, "jpeg")
        w.add_stream("tf", TFMessage, "lcm")
        w.add_stream("lidar", PointCloud2, "lcm")
        for seq, ts in enumerate(stamps):
            w.write("camera_info", ts, _info_seq(ts, seq))
            image = jpeg_image(frame_rgb(seq, 8, 6), Header.at(ts, "cam", seq=seq))
            w.write("color_image", ts, image)
        w.write("tf", T, TFMessage(()))
        w.write("lidar", T, point_cloud(wall_points(4), T, "world"))
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    ids = [r[0] for r in conn.execute("SELECT id FROM camera_info ORDER BY ts, id")]
    conn.close()
    assert ids == [2, 4, 3, 1]
    with Recording.open(path) as rec:
        assert list(rec.timestamps("camera_info")) == [T + 1, T + 1, T + 2, T + 3]
        assert [rec.message("camera_info", i).header.seq for i in range(4)] == [1, 3, 2, 0]
        assert [rec.message("color_image", i).header.seq for i in range(4)] == [1, 3, 2, 0]
        assert [m.header.seq for _, m in rec.iter_messages("color_image")] == [1, 3, 2, 0]
        assert rec.lidar_stream == "lidar"


def test_same_messages_give_byte_identical_files(tmp_path: Path) -> None:
    a = make_recording(tmp_path / "a.db", n_frames=4)
    b = make_recording(tmp_path / "b.db", n_frames=4)
    assert a.read_bytes() == b.read_bytes()
    c = make_recording(tmp_path / "c.db", n_frames=4, t0=T + 1)
    assert a.read_bytes() != c.read_bytes()


def test_file_is_self_contained_wal_mode_and_matches_dimos_schema(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "rec.db")
    assert not (tmp_path / "rec.db-wal").exists() and not (tmp_path / "rec.db-shm").exists()
    assert not (tmp_path / "rec.db.tmp").exists()
    head = path.read_bytes()[:100]
    assert head[18:20] == b"\x02\x02"  # WAL read/write versions
    assert int.from_bytes(head[16:18], "big") == 4096
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        cols = [(r[1], r[2]) for r in conn.execute('PRAGMA table_info("camera_info")')]
        assert cols == [
            ("id", "INTEGER"),
            ("ts", "REAL"),
            ("value", "NUMERIC"),
            ("pose_x", "REAL"),
            ("pose_y", "REAL"),
            ("pose_z", "REAL"),
            ("pose_qx", "REAL"),
            ("pose_qy", "REAL"),
            ("pose_qz", "REAL"),
            ("pose_qw", "REAL"),
            ("tags", "BLOB"),
        ]
        blob_cols = [(r[1], r[2]) for r in conn.execute('PRAGMA table_info("tf_blob")')]
        assert blob_cols == [("id", "INTEGER"), ("data", "BLOB")]
        stream_cols = [(r[1], r[2]) for r in conn.execute("PRAGMA table_info(_streams)")]
        assert stream_cols == [("name", "TEXT"), ("config", "TEXT")]
        config = json.loads(
            conn.execute("SELECT config FROM _streams WHERE name = 'color_image'").fetchone()[0]
        )
        assert config["payload_module"] == PAYLOAD_MODULES[Image]
        assert config["codec_id"] == "jpeg"
        assert config["blob_store"]["class"] == "dimos.memory2.blobstore.sqlite.SqliteBlobStore"
        # Posed rows are indexed in the R*Tree; camera_info was written without a pose.
        assert conn.execute('SELECT COUNT(*) FROM "tf_rtree"').fetchone()[0] == 9
        assert conn.execute('SELECT COUNT(*) FROM "camera_info_rtree"').fetchone()[0] == 0
        pose = conn.execute('SELECT pose_x, pose_qw FROM "tf" WHERE id = 4').fetchone()
        assert pose == (0.1, 1.0)
        assert conn.execute('SELECT tags FROM "tf" WHERE id = 1').fetchone()[0] == "{}"
    finally:
        conn.close()


def test_tags_are_stored_as_sorted_json(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path / "t.db") as w:
        w.add_stream("tf", TFMessage, "lcm")
        w.write("tf", T, TFMessage(()), tags={"b": 1, "a": "x"})
    conn = sqlite3.connect(tmp_path / "t.db")
    assert conn.execute("SELECT json(tags) FROM tf").fetchone()[0] == '{"a":"x","b":1}'
    conn.close()


def test_refuses_existing_file_unless_overwrite(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "rec.db")
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match=r"rec\.db: already exists.*overwrite=True"):
        RecordingWriter(path)
    assert path.read_bytes() == before
    make_recording(path, n_frames=2, overwrite=True)
    with Recording.open(path) as rec:
        assert rec.streams["color_image"].count == 2


def test_output_appears_only_on_close_and_not_at_all_on_error(tmp_path: Path) -> None:
    path = tmp_path / "atomic.db"
    w = RecordingWriter(path)
    w.add_stream("tf", TFMessage, "lcm")
    w.write("tf", T, TFMessage(()))
    assert not path.exists() and (tmp_path / "atomic.db.tmp").exists()
    w.close()
    assert path.exists() and not (tmp_path / "atomic.db.tmp").exists()

    failed = tmp_path / "failed.db"
    with pytest.raises(RuntimeError, match="boom"), RecordingWriter(failed) as w2:
        w2.add_stream("tf", TFMessage, "lcm")
        raise RuntimeError("boom")
    assert list(tmp_path.glob("failed.db*")) == []


def test_writer_rejects_bad_streams_and_messages(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path / "bad.db") as w:
        with pytest.raises(ValueError, match="not a valid identifier"):
            w.add_stream('bad"name', TFMessage, "lcm")
        with pytest.raises(ValueError, match="lz4"):
            w.add_stream("depth", Image, "lz4+lcm")
        with pytest.raises(ValueError, match="pickle is never written"):
            w.add_stream("odom", TFMessage, "pickle")
        with pytest.raises(ValueError, match="'jpeg' is for Image"):
            w.add_stream("tf", TFMessage, "jpeg")
        with pytest.raises(ValueError, match="not a message this writer encodes"):
            w.add_stream("odom", "dimos.msgs.nav_msgs.Odometry.Odometry", "lcm")
        w.add_stream("tf", "dimos.msgs.tf2_msgs.TFMessage.TFMessage", "lcm")
        w.add_stream("color_image", Image, "jpeg")
        with pytest.raises(ValueError, match="already registered"):
            w.add_stream("tf", TFMessage, "lcm")
        with pytest.raises(KeyError, match="call add_stream"):
            w.write("camera_info", T, TFMessage(()))
        with pytest.raises(TypeError, match="holds TFMessage messages, got Image"):
            w.write("tf", T, Image(Header(), 1, 1, "mono8", 0, 1, b"\x00"))
        with pytest.raises(CodecError, match="jpeg_image"):
            w.write("color_image", T, Image(Header(), 1, 1, "mono8", 0, 1, b"\x00"))
        with pytest.raises(ValueError, match="ts must be finite"):
            w.write("tf", float("nan"), TFMessage(()))
        with pytest.raises(ValueError, match="pose must be 7 finite floats"):
            w.write("tf", T, TFMessage(()), pose=(0.0, 0.0, 0.0))
