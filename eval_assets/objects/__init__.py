"""Objects found in the LiDAR without weights (``shared/specs/evidence.md``).

:mod:`~eval_assets.objects.lidar` finds them on the floor plan of the recording's sweeps,
:mod:`~eval_assets.objects.masks` projects them into each image in depth order, and
:mod:`~eval_assets.objects.naming` names one only when the detector's or the taught references'
votes are certain. The tracks stage (:mod:`eval_assets.tracks.lidar_objects`) wires them together;
nothing here reads a file.
"""
