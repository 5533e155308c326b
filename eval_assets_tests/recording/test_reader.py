"""Recording.open: validation at startup (one test per bad input) and read access."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from eval_assets.recording import (
    REQUIRED_STREAMS,
    Recording,
    RecordingError,
    RecordingWriter,
    StreamInfo,
    jpeg_image,
)
from eval_assets.recording.messages import CameraInfo, Header, PointCloud2, TFMessage
from eval_assets_tests.factories import (
    T0,
    camera_info,
    frame_rgb,
    make_recording,
    point_cloud,
    wall_points,
)

EditDb = Callable[..., None]


def open_error(path: Path, **kwargs: bool) -> RecordingError:
    with pytest.raises(RecordingError) as info:
        Recording.open(path, **kwargs)
    return info.value


# --- valid recordings ---------------------------------------------------------------------------


def test_opens_a_valid_recording_and_describes_its_streams(recording_path: Path) -> None:
    with Recording.open(recording_path) as rec:
        assert rec.path == recording_path
        assert rec.sha256 == hashlib.sha256(recording_path.read_bytes()).hexdigest()
        assert set(rec.streams) == {"color_image", "camera_info", "tf", "pointlio_lidar"}
        assert rec.streams["tf"] == StreamInfo(
            "tf", "dimos.msgs.tf2_msgs.TFMessage.TFMessage", "lcm", 9, T0, T0 + 0.2
        )
        assert rec.lidar_stream == "pointlio_lidar"
        ts = rec.timestamps("color_image")
        assert ts.dtype == np.float64 and list(ts) == [T0, T0 + 0.1, T0 + 0.2]
        cloud = rec.message("pointlio_lidar", 1)
        assert isinstance(cloud, PointCloud2) and cloud.header.frame_id == "mid360_link"
        assert cloud.xyz().shape == (240, 3)
        assert [type(m) for _, m in rec.iter_messages("camera_info")] == [CameraInfo] * 3
        with pytest.raises(IndexError, match="has 3 messages, index 3"):
            rec.message("color_image", 3)
        with pytest.raises(KeyError, match="no stream 'depth'"):
            rec.timestamps("depth")


def test_required_streams_constant() -> None:
    assert REQUIRED_STREAMS == (
        ("color_image",),
        ("camera_info",),
        ("tf",),
        ("pointlio_lidar", "lidar"),
    )


def test_go2_lidar_stream_is_used_when_pointlio_is_absent(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "go2.db", lidar_stream="lidar")
    with Recording.open(path) as rec:
        assert rec.lidar_stream == "lidar"
        assert rec.message("lidar", 0).header.frame_id == "world"


def test_empty_pointlio_lidar_falls_back_to_lidar(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "both.db", lidar_stream="lidar")
    with sqlite3.connect(path) as conn:  # register an empty pointlio_lidar next to it
        conn.execute(
            "INSERT INTO _streams SELECT 'pointlio_lidar', config FROM _streams "
            "WHERE name = 'lidar'"
        )
        conn.execute('CREATE TABLE pointlio_lidar AS SELECT * FROM "lidar" WHERE 0')
        conn.execute('CREATE TABLE pointlio_lidar_blob AS SELECT * FROM "lidar_blob" WHERE 0')
    conn.close()
    with Recording.open(path) as rec:
        assert rec.streams["pointlio_lidar"].count == 0
        assert rec.streams["pointlio_lidar"].t_start is None
        assert rec.lidar_stream == "lidar"


def test_open_never_writes_beside_or_into_the_file(recording_path: Path) -> None:
    before = recording_path.read_bytes()
    mtime = recording_path.stat().st_mtime_ns
    with Recording.open(recording_path) as rec:
        list(rec.iter_messages("tf"))
    assert recording_path.read_bytes() == before
    assert recording_path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in recording_path.parent.iterdir()) == ["rec.db"]


def test_uncheckpointed_wal_commits_are_visible(tmp_path: Path) -> None:
    # A recorder killed before closing leaves commits in rec.db-wal; copy that state.
    src = make_recording(tmp_path / "src.db")
    live = sqlite3.connect(src)
    live.execute("PRAGMA wal_autocheckpoint = 0")
    live.execute(
        'INSERT INTO "camera_info" (ts, tags) SELECT ts + 1, tags FROM "camera_info" WHERE id = 1'
    )
    live.execute(
        'INSERT INTO "camera_info_blob" (id, data) SELECT 4, data FROM "camera_info_blob" '
        "WHERE id = 1"
    )
    live.commit()
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copy(src, crashed / "rec.db")
    shutil.copy(tmp_path / "src.db-wal", crashed / "rec.db-wal")
    live.close()
    assert (crashed / "rec.db-wal").stat().st_size > 0
    with Recording.open(crashed / "rec.db") as rec:
        assert rec.streams["camera_info"].count == 4


def test_allow_pickle_opens_a_trusted_pickle_stream(recording_path: Path, edit_db: EditDb) -> None:
    info = camera_info(64, 48, T0)
    edit_db(
        recording_path,
        "UPDATE _streams SET config = json_set(config, '$.codec_id', 'pickle') "
        "WHERE name = 'camera_info'",
        ("UPDATE camera_info_blob SET data = ?", (pickle.dumps(info),)),
    )
    with Recording.open(recording_path, allow_pickle=True) as rec:
        assert rec.message("camera_info", 0) == info


# --- validation at open: one test per bad input -------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    err = open_error(tmp_path / "nope.db")
    assert str(err).startswith(f"{tmp_path / 'nope.db'}: file not found")
    assert "Fix:" in str(err)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert "is not a file" in str(open_error(tmp_path))


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.db").write_bytes(b"")
    assert "file is empty (0 bytes)" in str(open_error(tmp_path / "empty.db"))


def test_not_a_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are not the bytes you are looking for\n" * 200)
    msg = str(open_error(path))
    assert msg.startswith(f"{path}: not a readable SQLite recording")
    assert "not a database" in msg and "Fix:" in msg


def test_truncated_file(recording_path: Path) -> None:
    data = recording_path.read_bytes()
    recording_path.write_bytes(data[: len(data) // 2])
    msg = str(open_error(recording_path))
    assert "not a readable SQLite recording" in msg and "malformed" in msg
    assert "truncated" in msg and "Fix:" in msg


def test_streams_table_missing(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(recording_path, "DROP TABLE _streams")
    msg = str(open_error(recording_path))
    assert "table '_streams' is missing" in msg and "Fix:" in msg


@pytest.mark.parametrize("stream", ["color_image", "camera_info", "tf"])
def test_required_stream_missing(tmp_path: Path, stream: str) -> None:
    path = make_recording(tmp_path / "rec.db", omit=(stream,))
    err = open_error(path)
    assert str(err) == (
        f"{path}: stream '{stream}' is missing. A recording needs color_image, camera_info, tf "
        "and pointlio_lidar or lidar. Fix: record with dimOS's memory recorder with the camera, "
        "camera_info, TF and LiDAR streams enabled, or pass a complete recording."
    )
    assert err.stream == stream and err.path == path


def test_lidar_missing_names_both_alternatives(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "rec.db", omit=("pointlio_lidar",))
    assert "stream 'pointlio_lidar or lidar' is missing" in str(open_error(path))


def test_required_stream_table_missing(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(recording_path, 'DROP TABLE "tf_blob"')
    msg = str(open_error(recording_path))
    assert "stream 'tf' is registered in _streams but table 'tf' or 'tf_blob' is missing" in msg


@pytest.mark.parametrize("stream", ["color_image", "camera_info", "tf", "pointlio_lidar"])
def test_required_stream_empty(tmp_path: Path, stream: str) -> None:
    path = make_recording(tmp_path / "rec.db", empty=(stream,))
    err = open_error(path)
    shown = "pointlio_lidar or lidar" if stream == "pointlio_lidar" else stream
    assert f"stream '{shown}' is empty (0 rows)" in str(err)
    assert "Fix:" in str(err) and err.stream == stream


def test_unknown_codec(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(
        recording_path,
        "UPDATE _streams SET config = json_set(config, '$.codec_id', 'zstd+lcm') "
        "WHERE name = 'camera_info'",
    )
    msg = str(open_error(recording_path))
    assert "stream 'camera_info' has unknown codec_id 'zstd+lcm'" in msg
    assert "jpeg, lcm, lz4+lcm, pickle" in msg and "Fix:" in msg


def test_pickle_refused_without_opt_in(recording_path: Path, edit_db: EditDb) -> None:
    # The payload would run code when unpickled; the reader must refuse before touching it.
    marker = recording_path.parent / "pwned"
    payload = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
    edit_db(
        recording_path,
        "UPDATE _streams SET config = json_set(config, '$.codec_id', 'pickle') WHERE name = 'tf'",
        ("UPDATE tf_blob SET data = ?", (payload,)),
    )
    err = open_error(recording_path)
    assert "stream 'tf' uses codec 'pickle', which is refused" in str(err)
    assert "allow_pickle=True" in str(err)
    assert not marker.exists()


def test_wrong_payload_type(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(
        recording_path,
        "UPDATE _streams SET config = json_set(config, '$.payload_module', "
        "'dimos.msgs.sensor_msgs.Image.Image') WHERE name = 'camera_info'",
    )
    msg = str(open_error(recording_path))
    assert "stream 'camera_info' holds payload_module 'dimos.msgs.sensor_msgs.Image.Image'" in msg
    assert "expected a CameraInfo" in msg


def test_unreadable_stream_config(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(recording_path, "UPDATE _streams SET config = '{not json' WHERE name = 'tf'")
    msg = str(open_error(recording_path))
    assert "stream 'tf' has an unreadable _streams.config" in msg and "Fix:" in msg


def test_wrong_lcm_fingerprint(recording_path: Path, edit_db: EditDb) -> None:
    # An Image payload in every camera_info row: none decodes, so the stream is unusable.
    edit_db(
        recording_path,
        "UPDATE camera_info_blob SET data = (SELECT data FROM color_image_blob WHERE id = 1)",
    )
    err = open_error(recording_path)
    assert (
        "stream 'camera_info' row id 1: LCM fingerprint mismatch, expected afb501b00707a02a "
        "(dimos.msgs.sensor_msgs.CameraInfo.CameraInfo), got 535cface1f4f5717" in str(err)
    )
    assert err.stream == "camera_info" and err.row_id == 1


def test_truncated_blob(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(recording_path, "UPDATE tf_blob SET data = substr(data, 1, length(data) - 5)")
    err = open_error(recording_path)
    assert "stream 'tf' row id 1: payload does not decode (truncated:" in str(err)
    assert "Fix:" in str(err) and err.row_id == 1


def test_missing_blob_rows(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(recording_path, "DELETE FROM color_image_blob")
    msg = str(open_error(recording_path))
    assert "stream 'color_image' row id 1 has no payload in 'color_image_blob'" in msg


def test_one_damaged_first_row_is_left_to_the_stages(recording_path: Path,
                                                     edit_db: EditDb) -> None:
    # The first image has no payload and the first camera_info is another message: open uses
    # the first rows that decode; the frame stage skips frame 0 with its reason.
    edit_db(
        recording_path,
        "DELETE FROM color_image_blob WHERE id = 1",
        "UPDATE camera_info_blob SET data = (SELECT data FROM tf_blob WHERE id = 1) WHERE id = 1",
    )
    with Recording.open(recording_path) as rec:
        assert rec.payload("color_image", 0) is None
        assert rec.message("color_image", 1).width == 64
        with pytest.raises(RecordingError, match="row id 1 has no payload"):
            rec.message("color_image", 0)
        errors: list[RecordingError] = []
        assert len(list(rec.iter_messages("camera_info", errors))) == 2
        assert [e.row_id for e in errors] == [1]
        assert rec.positions_without_payload("color_image") == [0]
        assert rec.positions_without_payload("tf") == []


def test_camera_info_size_mismatch(tmp_path: Path) -> None:
    path = make_recording(tmp_path / "rec.db", camera_info_size=(640, 480))
    err = open_error(path)
    assert (
        "stream 'camera_info' describes 640x480 images but the first 'color_image' is 64x48"
        in str(err)
    )
    assert "Fix:" in str(err)


def test_later_decode_errors_name_stream_and_row(recording_path: Path, edit_db: EditDb) -> None:
    # Row 3 of the LiDAR is corrupt: open succeeds (it checks the first message), reading fails.
    edit_db(
        recording_path, "UPDATE pointlio_lidar_blob SET data = substr(data, 1, 100) WHERE id = 3"
    )
    with Recording.open(recording_path) as rec:
        rec.message("pointlio_lidar", 1)
        with pytest.raises(RecordingError, match=r"stream 'pointlio_lidar' row id 3: payload"):
            rec.message("pointlio_lidar", 2)


def test_non_required_pickle_stream_opens_but_is_not_unpickled(
    recording_path: Path, edit_db: EditDb
) -> None:
    # dimOS stores e.g. odometry with pickle: the recording stays usable, the stream stays shut.
    edit_db(
        recording_path,
        (
            "INSERT INTO _streams VALUES ('odom', ?)",
            (
                json.dumps(
                    {
                        "payload_module": "dimos.msgs.nav_msgs.Odometry.Odometry",
                        "codec_id": "pickle",
                    }
                ),
            ),
        ),
        "CREATE TABLE odom (id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, tags BLOB)",
        "CREATE TABLE odom_blob (id INTEGER PRIMARY KEY, data BLOB NOT NULL)",
        f"INSERT INTO odom (ts) VALUES ({T0})",
        ("INSERT INTO odom_blob VALUES (1, ?)", (pickle.dumps({"x": 1}),)),
    )
    with Recording.open(recording_path) as rec:
        assert rec.streams["odom"].count == 1
        with pytest.raises(RecordingError, match=r"stream 'odom' row id 1: .*allow_pickle=True"):
            rec.message("odom", 0)


def test_factory_rejects_unknown_overrides(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="unknown overrides"):
        make_recording(tmp_path / "x.db", colour="red")


def test_writer_output_with_a_tf_transform_alias_opens(tmp_path: Path) -> None:
    # dimOS may register tf as geometry_msgs Transform, whose LCM bytes are a TFMessage.
    path = tmp_path / "alias.db"
    with RecordingWriter(path) as w:
        w.add_stream("tf", "dimos.msgs.geometry_msgs.Transform.Transform", "lcm")
        w.add_stream("camera_info", CameraInfo, "lcm")
        w.add_stream("lidar", PointCloud2, "lcm")
        w.add_stream("color_image", "dimos.msgs.sensor_msgs.Image.Image", "jpeg")
        w.write("tf", T0, TFMessage(()))
        w.write("camera_info", T0, camera_info(8, 6, T0))
        w.write("lidar", T0, point_cloud(wall_points(5), T0, "world"))
        w.write("color_image", T0, jpeg_image(frame_rgb(0, 8, 6), Header.at(T0, "cam")))
    with Recording.open(path) as rec:
        assert rec.message("tf", 0) == TFMessage(())


def test_stream_table_without_ts_column(recording_path: Path, edit_db: EditDb) -> None:
    edit_db(recording_path, 'DROP TABLE "tf"', 'CREATE TABLE "tf" (id INTEGER PRIMARY KEY)')
    msg = str(open_error(recording_path))
    assert "stream 'tf': table 'tf' is not a dimOS stream table" in msg and "Fix:" in msg
