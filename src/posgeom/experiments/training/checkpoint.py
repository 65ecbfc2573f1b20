CHECKPOINT = "checkpoint.safetensors"
LOG = "log.jsonl"
FORMAT = "posgeom.train/1"


# ----------------------------------------------------------------------------- checkpoints
def _save_checkpoint(path: Path, model: Any, opt: Any, meta: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    from posgeom.artifacts import atomic_path

    tensors = {f"model.{k}": v.detach().contiguous().clone().cpu()
               for k, v in model.state_dict().items()}
    state = opt.state_dict()
    for idx, st in state["state"].items():
        for key, val in st.items():
            tensors[f"optim.{idx}.{key}"] = val.detach().reshape(-1).contiguous().clone().cpu()
    meta = {**meta, "format": FORMAT, "param_groups": state["param_groups"],
            "step_shapes": {f"{i}.{k}": list(v.shape) for i, st in state["state"].items()
                            for k, v in st.items()}}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"posgeom": json.dumps(meta, sort_keys=True)})


def _load_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get("posgeom")
        tensors = load_file(str(path))
    except Exception as exc:
        raise ArtifactError(f"{path} is not a readable checkpoint ({exc}); delete it to restart"
                            ) from exc
    if raw is None:
        raise ArtifactError(f"{path} has no posgeom metadata; delete it to restart")
    meta = json.loads(raw)
    if meta.get("format") != FORMAT:
        raise ArtifactError(f"{path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    return meta, tensors


def _restore(model: Any, opt: Any, meta: dict[str, Any], tensors: dict[str, Any]) -> None:
    state_dict = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    model.load_state_dict(state_dict)
    state: dict[int, dict[str, Any]] = {}
    for name, val in tensors.items():
        if not name.startswith("optim."):
            continue
        _, idx, key = name.split(".", 2)
        shape = meta["step_shapes"][f"{idx}.{key}"]
        state.setdefault(int(idx), {})[key] = val.reshape(shape)
    opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


