"""MP4 videos of recorded frames, encoded with PyAV (FFmpeg inside its wheel; no system FFmpeg).

Two profiles, both H.264 with each frame at its recorded time (variable frame rate; the
stream's time base is 1/1000 s, timestamps in whole milliseconds):

``LOSSLESS`` (LeRobot dataset videos)
    ``libx264rgb`` at ``crf 0``: H.264 lossless coding of the RGB pixels themselves (High
    4:4:4 Predictive profile), so a decoder returns exactly the pixels that were encoded
    (PSNR infinite, MSE 0), and no RGB -> YCbCr conversion rounds them. Any FFmpeg-based
    decoder (PyAV, torchvision's pyav backend, torchcodec) reads it. AV1 (lerobot's default
    when it records) would be lossy at useful sizes; the exported data is training data, so
    exactness wins over the smaller file. A keyframe every ``GOP`` frames bounds seeking.
    Preset ``ultrafast``: x264's encode is most of a LeRobot export's CPU, and this preset
    takes about half the CPU of ``superfast`` (on 600x400 CartPole frames; a third on Pong)
    for files 28-33 % larger (Pong's flat observations 3x), lossless either way
    (docs/performance.md, "Export throughput"; ``superfast`` was itself about 10x faster
    than x264's default). A LeRobot export encodes its episodes in its worker threads,
    several at once, each thread's on an encoder of its own (:class:`FrameEncoder`, one
    x264 thread), and muxes them in order (:meth:`VideoWriter.mux`): each episode starts
    with a keyframe.
``PLAYABLE`` (episode videos to watch)
    ``libx264`` ``yuv420p`` at ``crf 18``: what every browser and player plays. 4:2:0 chroma
    subsampling blurs sharp coloured edges: the tests hold it to PSNR >= ``PLAYABLE_PSNR_DB``
    against the recorded frames (measured: about 39 dB on Pong, more on smoother scenes).
    Odd frame sizes are padded to even ones by repeating the last row/column.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import simplejpeg

TIME_BASE = Fraction(1, 1000)
GOP = 10
PLAYABLE_PSNR_DB = 30.0
DEFAULT_INTERVAL_MS = 33  # for unknown step times, when an episode has no known interval


@dataclass(frozen=True)
class Profile:
    codec: str
    pix_fmt: str
    options: dict[str, str]
    even: bool  # the pixel format needs even width and height


LOSSLESS = Profile(
    "libx264rgb",
    "rgb24",
    # force-cfr: x264 then holds no frame back to learn its duration (FrameEncoder's parts
    # come out whole); the frames keep their times (the container's), and at crf 0 the
    # rate control has nothing to decide
    {"crf": "0", "bf": "0", "g": str(GOP), "preset": "ultrafast", "x264-params": "force-cfr=1"},
    even=False,
)
PLAYABLE = Profile(
    "libx264",
    "yuv420p",
    {"crf": "18", "bf": "0", "g": "30", "preset": "veryfast", "movflags": "+faststart"},
    even=True,
)


def decode_jpeg(data: bytes) -> np.ndarray:
    """A recorded frame (JPEG bytes) as RGB pixels, H x W x 3 uint8."""
    return np.asarray(simplejpeg.decode_jpeg(data, colorspace="RGB"))


def as_rgb(frame: np.ndarray) -> np.ndarray:
    """An H x W x 3 uint8 array (H x W and H x W x 1 grey frames are repeated to RGB)."""
    arr = np.asarray(frame)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim == 2:
        arr = np.repeat(arr[:, :, None], 3, axis=2)
    return np.ascontiguousarray(arr, dtype=np.uint8)


def interval_ms(observed_ms: Sequence[float]) -> int:
    """The median interval between known recorded step times (ms)."""
    known = [t for t in observed_ms if t >= 0]
    diffs = [b - a for a, b in zip(known, known[1:], strict=False) if b > a]
    return max(1, round(statistics.median(diffs))) if diffs else DEFAULT_INTERVAL_MS


def step_times_ms(observed_ms: Sequence[float]) -> list[int]:
    """Each step's time in ms from the episode's first step (strictly increasing), from the
    recorded times (``RldsEpisode.observed_ms``)."""
    return monotonic_ms(observed_ms, interval_ms(observed_ms))


def monotonic_ms(times_ms: Sequence[int | float], fallback_interval_ms: int) -> list[int]:
    """Presentation times in whole ms, strictly increasing, starting at 0.

    An unknown time (negative or not finite) or one not after its predecessor becomes the
    previous time plus ``fallback_interval_ms`` (unknown) or plus 1 ms (a repeat).
    """
    out: list[int] = []
    origin: float | None = None
    for t in times_ms:
        known = isinstance(t, int | float) and np.isfinite(t) and t >= 0
        if origin is None:
            origin = float(t) if known else 0.0
            out.append(0)
            continue
        if not known:
            out.append(out[-1] + max(1, fallback_interval_ms))
            continue
        value = int(round(float(t) - origin))
        out.append(value if value > out[-1] else out[-1] + 1)
    return out


def _configure(ctx: Any, width: int, height: int, profile: Profile, threads: int | None) -> None:
    """Set an encoder's size, pixel format, time base, threads (None: the codec's default)
    and options: the same for a file's stream and for a :class:`FrameEncoder`."""
    ctx.width = width + (width % 2 if profile.even else 0)
    ctx.height = height + (height % 2 if profile.even else 0)
    ctx.pix_fmt = profile.pix_fmt
    ctx.time_base = TIME_BASE
    if threads is not None:
        ctx.thread_count = threads
    ctx.options = {k: v for k, v in profile.options.items() if k != "movflags"}


def _video_frame(rgb: np.ndarray, width: int, height: int, profile: Profile) -> Any:
    """``rgb`` (H x W x 3 uint8 of this size) as a frame to encode (padded to even sizes
    where the profile needs them)."""
    if rgb.shape[:2] != (height, width):
        raise ValueError(f"frame of {rgb.shape[1]}x{rgb.shape[0]} in a {width}x{height} video")
    if profile.even and (width % 2 or height % 2):
        rgb = np.pad(rgb, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")
    return av.VideoFrame.from_numpy_buffer(rgb, format="rgb24")  # no copy (rgb is contiguous)


@dataclass(frozen=True)
class EncodedFrames:
    """A part of a video encoded by a :class:`FrameEncoder`: packets to mux into a
    :class:`VideoWriter` of the same size and profile (:meth:`VideoWriter.mux`)."""

    width: int
    height: int
    extradata: bytes  # the encoder's stream headers (H.264: SPS and PPS)
    packets: list[Any]  # av.Packet, times in ms from the first frame
    last_ms: int  # the last frame's time


class FrameEncoder:
    """An encoder (one thread) of parts of a video, one part at a time: each part starts
    with a keyframe (an IDR frame: nothing before it is referred to) and comes out whole, no
    frame held back, so that parts from several encoders with the same settings follow one
    another in a file in any order (:meth:`VideoWriter.mux`). One episode's frames are a
    part: an export encodes several episodes at once, each thread's on an encoder of its
    own (the codec releases the GIL), and muxes them in order. The parts' bytes depend on
    the parts this encoder was given before (x264 numbers its frames). Not thread-safe."""

    def __init__(self, width: int, height: int, profile: Profile = LOSSLESS) -> None:
        self.width, self.height, self.profile = width, height, profile
        ctx: Any = av.CodecContext.create(profile.codec, "w")
        _configure(ctx, width, height, profile, 1)
        ctx.framerate = 30  # as a file's stream (add_stream's rate)
        ctx.flags |= av.codec.context.Flags.global_header  # headers in extradata, as in an MP4
        self._ctx = ctx
        self._next_pts = 0  # the encoder's own clock: increasing over its parts

    def encode(self, frames: Sequence[np.ndarray], times_ms: Sequence[int]) -> EncodedFrames:
        """Encode ``frames`` (H x W x 3 uint8 of this encoder's size) shown at ``times_ms``
        (strictly increasing, from 0) as one part."""
        if not frames:
            raise ValueError("a video needs at least one frame")
        packets: list[Any] = []
        offset, last = self._next_pts, -1
        for i, (frame, at_ms) in enumerate(zip(frames, times_ms, strict=True)):
            if at_ms <= last:
                raise ValueError(f"frame time {at_ms} ms is not after {last} ms")
            vf = _video_frame(as_rgb(frame), self.width, self.height, self.profile)
            vf.pts = offset + at_ms
            vf.time_base = TIME_BASE
            if i == 0:
                vf.pict_type = av.video.frame.PictureType.I  # a keyframe: the part's start
            packets += self._ctx.encode(vf)
            last = at_ms
        if len(packets) != len(frames):  # a frame held back would belong to the next part
            raise ValueError(f"the encoder gave {len(packets)} packets for {len(frames)} frames")
        for packet in packets:
            packet.pts -= offset
            packet.dts -= offset
        self._next_pts = offset + last + 1
        return EncodedFrames(self.width, self.height, bytes(self._ctx.extradata), packets, last)


class VideoWriter:
    """An MP4 file written frame by frame at given times (ms from the file's start), or from
    frames encoded elsewhere (:meth:`mux`). ``threads``: the encoder's (None: the codec's
    default)."""

    def __init__(
        self,
        path: Path,
        width: int,
        height: int,
        profile: Profile = LOSSLESS,
        threads: int | None = None,
    ):
        self.profile = profile
        self.width, self.height = width, height
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        muxer = {"movflags": profile.options["movflags"]} if "movflags" in profile.options else {}
        self._container: Any = av.open(str(self.path), "w", format="mp4", options=muxer)
        stream: Any = self._container.add_stream(profile.codec, rate=30)
        _configure(stream.codec_context, width, height, profile, threads)
        stream.time_base = TIME_BASE
        self._stream = stream
        self.last_ms = -1

    def add(self, frame: np.ndarray, at_ms: int) -> None:
        """Encode ``frame`` (H x W x 3 uint8 of this writer's size) shown from ``at_ms``."""
        vf = _video_frame(as_rgb(frame), self.width, self.height, self.profile)
        if at_ms <= self.last_ms:
            raise ValueError(f"frame time {at_ms} ms is not after {self.last_ms} ms")
        vf.pts = at_ms
        vf.time_base = TIME_BASE
        for packet in self._stream.encode(vf):
            self._container.mux(packet)
        self.last_ms = at_ms

    def mux(self, encoded: EncodedFrames, start_ms: int) -> None:
        """Append a part encoded by a :class:`FrameEncoder` (with this writer's profile),
        shown from ``start_ms`` on. Its encoder's stream headers must be this file's:
        parts from several encoders then decode as one stream, each from its keyframe. The
        packets are moved to this file (their times shifted)."""
        if (encoded.width, encoded.height) != (self.width, self.height):
            raise ValueError(
                f"frames of {encoded.width}x{encoded.height} in a {self.width}x{self.height} video"
            )
        if start_ms <= self.last_ms:
            raise ValueError(f"frame time {start_ms} ms is not after {self.last_ms} ms")
        self._container.start_encoding()  # opens this file's encoder: its headers
        headers = bytes(self._stream.codec_context.extradata or b"")
        if headers != encoded.extradata:
            raise ValueError("the frames were encoded with other settings than this video's")
        for packet in encoded.packets:
            packet.pts += start_ms
            packet.dts += start_ms
            packet.stream = self._stream
            self._container.mux(packet)
        encoded.packets.clear()
        self.last_ms = start_ms + encoded.last_ms

    def close(self) -> None:
        """Flush the encoder and finish the file."""
        if self._container is None:
            return
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()
        self._container = None

    def abort(self) -> None:
        """Close without caring for the file (an error happened)."""
        if self._container is not None:
            try:
                self._container.close()
            finally:
                self._container = None


def write_video(
    path: Path,
    frames: Iterable[np.ndarray],
    times_ms: Sequence[int],
    profile: Profile = PLAYABLE,
) -> Path:
    """One MP4 of ``frames`` shown at ``times_ms`` (strictly increasing, from 0)."""
    writer: VideoWriter | None = None
    try:
        for frame, at in zip(frames, times_ms, strict=True):
            rgb = as_rgb(frame)
            if writer is None:
                writer = VideoWriter(path, rgb.shape[1], rgb.shape[0], profile)
            writer.add(rgb, at)
        if writer is None:
            raise ValueError("a video needs at least one frame")
        writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        Path(path).unlink(missing_ok=True)
        raise
    return Path(path)


def read_video(path: Path) -> tuple[list[np.ndarray], list[float]]:
    """Every frame of an MP4 as RGB arrays and its time in seconds (tests, benchmarks)."""
    frames, times = [], []
    container: Any = av.open(str(path))
    with container:
        for frame in container.decode(video=0):
            frames.append(frame.to_ndarray(format="rgb24"))
            times.append(float(frame.pts * frame.time_base))
    return frames, times


def psnr(got: np.ndarray, want: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB (inf when equal) over the common (unpadded) area."""
    h, w = want.shape[:2]
    diff = got[:h, :w].astype(np.float64) - want.astype(np.float64)
    mse = float(np.mean(diff * diff))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)
