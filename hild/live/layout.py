"""`hild layout [BENCH]`: a Foxglove layout for a run's topics (hild/record/channels.py), live
(``hild run --foxglove``) or recorded: the map on /location and each GPS's fixes (/fix), the
3D view following the vessel (/tf), plots of speed over ground and heading (/state) and of
each actuator's speed and angle, commanded and actual (/actuators, the bench vessel's
actuators), the raw lines of the bench's first command device (/bus/<device>) and the control
events (/control).

Built with the SDK's layout classes (``foxglove.layouts``, foxglove-sdk 0.30: ``Layout``,
``SplitContainer``, ``MapPanel``, ``ThreeDeePanel``, ``PlotPanel``, ``RawMessagesPanel``;
``Layout.to_json()``), so the JSON follows the SDK's layout format."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from hild.record import channels
from hild.record.fixes import reports_fixes

if TYPE_CHECKING:
    from hild.bench import Bench


TRUTH_COLOR = "#1f77b4"
FIX_COLOR = "#ff7f0e"


def _path(topic: str, field: str) -> str:
    """A message path: dotted keys go down the nested copy (channels.nested)."""
    return f"{topic}.{field}"


def layout_json(bench: Bench) -> str:
    import foxglove.layouts as fl

    def plot(title: str, series: list[tuple[str, str]]) -> fl.PlotPanel:
        return fl.PlotPanel(
            title=title,
            config=fl.PlotConfig(
                paths=[fl.PlotSeries(value=path, label=label) for path, label in series]
            ),
        )

    actuators: list[tuple[str, str]] = []
    for a in bench.vessel.actuators:
        speed, angle, _ = a.state_columns
        names = [speed] + ([angle] if a.angle_kind != "none" else [])
        for name in names:
            actuators.append((_path(channels.ACTUATORS, name), name))
            actuators.append((_path(channels.ACTUATORS, f"{name}_commanded"), f"{name} commanded"))
    # the truth in one colour, what each position sensor sent in another (/fix/<device>)
    map_colors = {channels.LOCATION: TRUTH_COLOR}
    map_colors.update(
        {channels.FIX + d.name: FIX_COLOR for d in bench.devices if reports_fixes(d.sentences)}
    )
    bus = [d.name for d in bench.devices if d.type.endswith("controller") or d.type == "frontseat"]
    raw_topic = channels.BUS + bus[0] if bus else channels.CONTROL
    content = fl.SplitContainer(
        direction="row",
        items=[
            fl.SplitItem(
                proportion=1,
                content=fl.SplitContainer(
                    direction="column",
                    items=[
                        fl.SplitItem(
                            content=fl.MapPanel(
                                title="Map",
                                config=fl.MapConfig(
                                    follow_topic=channels.LOCATION, topic_colors=map_colors
                                ),
                            )
                        ),
                        fl.SplitItem(
                            content=fl.ThreeDeePanel(
                                title="3D",
                                config=fl.ThreeDeeConfig(
                                    follow_tf=channels.FRAME, follow_mode="follow-position"
                                ),
                            )
                        ),
                    ],
                ),
            ),
            fl.SplitItem(
                proportion=1,
                content=fl.SplitContainer(
                    direction="column",
                    items=[
                        fl.SplitItem(
                            content=plot(
                                "Speed over ground [m/s]", [(_path(channels.STATE, "sog"), "sog")]
                            )
                        ),
                        fl.SplitItem(
                            content=plot(
                                "Heading [rad]",
                                [
                                    (_path(channels.STATE, "heading"), "heading"),
                                    (_path(channels.STATE, "cog"), "cog"),
                                ],
                            )
                        ),
                        fl.SplitItem(content=plot("Actuators", actuators)),
                    ],
                ),
            ),
            fl.SplitItem(
                proportion=1,
                content=fl.SplitContainer(
                    direction="column",
                    items=[
                        fl.SplitItem(
                            content=fl.RawMessagesPanel(
                                title=f"Raw {raw_topic}",
                                config=fl.RawMessagesConfig(topic_path=raw_topic),
                            )
                        ),
                        fl.SplitItem(
                            content=fl.RawMessagesPanel(
                                title="Control",
                                config=fl.RawMessagesConfig(topic_path=channels.CONTROL),
                            )
                        ),
                    ],
                ),
            ),
        ],
    )
    text = fl.Layout(content=content).to_json()
    return json.dumps(json.loads(text), indent=2)
