"""The claims table of REPRODUCTION.md: each of the paper's numbers, ours, and a verdict."""

from __future__ import annotations

from typing import Any

import numpy as np

from posgeom.pipeline.rows import MDS_ROW
from posgeom.reproduction.settings import CORPORA, NEAR_ZERO, PAPER


def fmt_number(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    return f"{x:.{digits}g}"


def fmt_percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def claims_sst2_stress(
    results: dict[str, Any], chosen: dict[str, Any], sweep: list[dict[str, Any]]
) -> list[str]:
    P = PAPER
    L = [
        "## The paper's claims, ours beside them\n",
        "| claim | paper | ours | verdict and reason |",
        "|---|---|---|---|",
    ]
    g, s_ = results["sst2_glue"], results["sst2_sentence"]

    def trio(res: Any) -> str:
        return (
            f"{fmt_number(res.row('alibi')['paper'], 3)} / {fmt_number(res.row('sinusoidal')['paper'], 3)} / "
            f"{fmt_number(res.row('rope')['paper'], 3)}"
        )

    sins = {k: results[k].row("sinusoidal")["paper"] for k in ("sst2_glue", "sst2_sentence")}
    closest = min(sins, key=lambda k: abs(np.log(sins[k] / P["sinusoidal_sst2"])))
    rel = sins[closest] / P["sinusoidal_sst2"] - 1
    ratio = {k: results[k].row("rope")["paper"] / sins[k] for k in sins}
    alibis = {k: results[k].row("alibi")["paper"] for k in sins}
    L.append(
        f"| paper stress on SST-2, ALiBi / sinusoidal / RoPE | 0.563 / 272 / 279 | GLUE train "
        f"(n = {chosen['sst2_glue']['n']}): {trio(g)}; sentence train (n = "
        f"{chosen['sst2_sentence']['n']}): {trio(s_)} | sinusoidal: {closest} is within "
        f"{100 * abs(rel):.0f}% of 272 ({'above' if rel > 0 else 'below'}); the value moves "
        "with n, "
        "special tokens and the convention (sweep below). RoPE (12 heads x 64) / sinusoidal = "
        + ", ".join(f"{v:.3f}" for v in ratio.values())
        + " vs the paper's 1.026: same direction, larger gap (heads of 128 match it, below). "
        f"ALiBi: our best head scores {', '.join(f'{v:.3g}' for v in alibis.values())}, "
        + ("below" if max(alibis.values()) < P["alibi_sst2"] else "not below")
        + " the paper's 0.563, which other slopes give (sweep); the paper does not say which "
        "head. |"
    )
    if sweep:
        for hd in (64, 128):
            b = min(sweep, key=lambda r, hd=hd: r[f"distance_to_paper_{hd}"])
            L.append(
                f"| closest sweep setting, RoPE heads of {hd} | 272 / 279 | {b['corpus']}, n = "
                f"{b['n']}, {b['special_tokens']}, {b['convention']}: sinusoidal "
                f"{b['sinusoidal']:.1f}, RoPE {b[f'rope_{hd}']:.1f} | "
                + (
                    "match within 5% on both numbers"
                    if b[f"distance_to_paper_{hd}"] < 0.05
                    else "no setting matches both within 5%"
                )
                + " (an inference, see the sweep) |"
            )
    return L


def claims_synthetic_rank(results: dict[str, Any]) -> list[str]:
    L: list[str] = []
    for key, label in (("synthetic", "sampled"), ("synthetic_exact", "exact distributions")):
        res = results[key]
        r3 = next((c for c in res.rank_curve if c["rank"] == 3), None)
        if r3 is None:
            continue
        cuts = {
            name: 1 - r3["paper"] / res.row(name)["paper"]
            for name in ("sinusoidal", "rope", "alibi", "t5", "nope", "random")
            if res.row(name)["paper"] > 0
        }
        cuts["rank-1 MDS"] = 1 - r3["paper"] / res.rank_curve[0]["paper"]
        low = min(cuts, key=cuts.get)
        L.append(
            f"| synthetic (n = 32, d = 128), rank-3 MDS ({label}) | stress -99.8%, parameters "
            f"-88% | stress {fmt_number(r3['paper'], 3)}; cut vs "
            + ", ".join(f"{k} {100 * v:.2f}%" for k, v in cuts.items())
            + f"; parameters {r3['parameters']} vs {r3['full_parameters']} "
            f"(-{fmt_percent(r3['parameter_reduction'])}) | parameters: exact (3·(32+128) = 480 vs "
            "4096). Stress: the paper does not name its baseline; the smallest cut here is "
            f"{100 * cuts[low]:.2f}% (vs {low}), "
            + (
                "so -99.8% is reproduced against every baseline. |"
                if cuts[low] >= 0.998
                else "so -99.8% holds against the fixed encodings but not against every baseline. |"
            )
        )
    return L


def claims_low_rank(results: dict[str, Any]) -> list[str]:
    L: list[str] = []
    for key in ("sst2_glue", "sst2_sentence"):
        res = results[key]
        hit = next((c for c in res.rank_curve if c["paper"] <= NEAR_ZERO), None)
        at90 = [c for c in res.rank_curve if c["parameter_reduction"] >= 0.895]
        txt = (
            f"paper stress <= {NEAR_ZERO} first at r = {hit['rank']} ({fmt_number(hit['paper'], 3)}, "
            f"parameters -{fmt_percent(hit['parameter_reduction'])})"
            if hit
            else f"no rank up to {len(res.rank_curve)} reaches {NEAR_ZERO}"
        )
        if at90:
            c = at90[-1]
            txt += (
                f"; at ~90% fewer parameters (r = {c['rank']}, "
                f"-{fmt_percent(c['parameter_reduction'])})"
                f" the stress is {fmt_number(c['paper'], 3)} vs sinusoidal "
                f"{fmt_number(res.row('sinusoidal')['paper'], 3)}"
            )
        ok = hit is not None and hit["parameter_reduction"] >= 0.85
        L.append(
            f"| low-rank MDS on {key} | near-zero stress, ~90% fewer parameters | {txt} | "
            + (
                "reproduced. |"
                if ok
                else "near zero only relative to the fixed encodings (hundreds); in absolute terms not "
                "reproduced: sampling noise of 30,522-word distributions spreads D over many "
                "dimensions (see the noise floor and the explained variance in the rank table). |"
            )
        )
    return L


def claims_violation_and_mds(results: dict[str, Any]) -> list[str]:
    P = PAPER
    real = [k for k, *_ in CORPORA]
    L: list[str] = []
    vr = []
    near = []
    for key in real:
        res = results[key]
        r3 = next((c for c in res.rank_curve if c["rank"] == 3), None)
        vr.append(
            f"{key}: MDS {fmt_percent(res.row(MDS_ROW)['violation_rate'])} (rank 3: "
            f"{fmt_percent(r3['violation_rate']) if r3 else 'n/a'}), random "
            f"{fmt_percent(res.row('random')['violation_rate'])}, pretrained "
            f"{fmt_percent(res.row('learned')['violation_rate'])}"
        )
        c22 = min(res.rank_curve, key=lambda c: abs(c["violation_rate"] - P["violation_mds"]))
        near.append(f"{key} r = {c22['rank']} ({fmt_percent(c22['violation_rate'])})")
    rnd = [results[k].row("random")["violation_rate"] for k in real]
    pre = [results[k].row("learned")["violation_rate"] for k in real]
    L.append(
        "| violation rate MDS / random / pretrained | 22% / 50% / 25.4% | "
        + "; ".join(vr)
        + " | random: "
        + ("reproduced (" if all(abs(v - 0.5) < 0.05 for v in rnd) else "(")
        + ", ".join(fmt_percent(v) for v in rnd)
        + "). MDS: full-rank MDS is isometric to D, so its "
        "rate is ~0; low-rank MDS comes closest to 22% at "
        + ", ".join(near)
        + ": the paper's MDS was presumably low rank (not stated). Pretrained: MiniLM gives "
        + ", ".join(fmt_percent(v) for v in pre)
        + ", not 25.4%; the paper used BERT-base's table, "
        "which is not available offline. |"
    )
    mds_stress = ", ".join(
        f"{k} {fmt_number(results[k].row(MDS_ROW)['paper'], 2)}" for k in results
    )
    L.append(
        f"| MDS encoding stress | near zero | {mds_stress} | reproduced (exact up to round-off: "
        "the chord Hellinger geometry is Euclidean, so full-rank classical MDS is isometric). |"
    )
    L.append("")
    return L
