"""Positions the support matrix once called "none": each mechanism against what the model
computes (tiny random models of transformers' own architectures, built by studies.support)."""

from __future__ import annotations

import copy
import os
import warnings

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from posgeom._errors import PosgeomError  # noqa: E402
from posgeom.encodings import family_of_mechanism  # noqa: E402
from posgeom.models import find_positional_mechanisms, mechanism_encodings  # noqa: E402
from studies import support  # noqa: E402

torch.set_num_threads(1)


@pytest.mark.filterwarnings("ignore")
def test_videomae_sinusoid_kept_as_a_plain_tensor_is_found():
    """VideoMAE adds a fixed sinusoidal table, kept as a plain tensor attribute (no parameter,
    no buffer), to its patch embeddings: found as an absolute sinusoid whose vectors are the
    table's rows, with Vaswani's base 10,000 (the paper's formula, computed here)."""
    model = support.build("videomae")
    table = model.embeddings.position_embeddings
    assert not isinstance(table, torch.nn.Parameter)
    assert "position_embeddings" not in dict(model.embeddings.named_buffers())
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "sinusoidal" and mech.layers is None
    rows = table[0].double().numpy()
    np.testing.assert_allclose(mech.params.vectors(np.arange(rows.shape[0])), rows, atol=1e-5)
    d = rows.shape[1]
    p, k = np.arange(rows.shape[0])[:, None], np.arange(d)[None, :]
    vaswani = p / 10000.0 ** (2 * (k // 2) / d)
    vaswani[:, 0::2], vaswani[:, 1::2] = np.sin(vaswani[:, 0::2]), np.cos(vaswani[:, 1::2])
    np.testing.assert_allclose(rows, vaswani, atol=1e-5)
    assert mech.params.standard_base() == pytest.approx(10000.0, rel=1e-4)
    enc = mechanism_encodings(model, 8)
    np.testing.assert_allclose(next(iter(enc.values())).vectors, rows[:8], atol=1e-5)


@pytest.mark.filterwarnings("ignore")
def test_vits_relative_key_embeddings_are_named_per_layer_and_refused():
    """VITS's attention adds a learned key vector per offset ``|i - j| <= window_size`` (zero
    beyond): one relative_embeddings entry per block, its table the model's ``emb_rel_k`` row by
    offset as the model's own ``_get_relative_embeddings`` lays them out; no geometry, refused."""
    model = support.build("vits")
    found = find_positional_mechanisms(model)
    layers = model.text_encoder.encoder.layers
    assert [(m.kind, m.layers) for m in found] == [
        ("relative_embeddings", (i,)) for i in range(len(layers))
    ]
    for mech, layer in zip(found, layers, strict=True):
        attn = layer.attention
        w = attn.window_size
        assert mech.max_relative_positions == w
        length = w + 3  # offsets -(L-1) .. L-1, two beyond the window on each side
        got = attn._get_relative_embeddings(attn.emb_rel_k, length)[0].detach().double().numpy()
        offsets = np.arange(-(length - 1), length)
        inside = np.abs(offsets) <= w
        np.testing.assert_array_equal(got[inside], mech.table[offsets[inside] + w])
        assert not got[~inside].any()
    with pytest.raises(PosgeomError, match="no position geometry"):
        found[0].to_encoding(4)
    assert mechanism_encodings(model, 8) == {}


@pytest.mark.filterwarnings("ignore")
def test_levit_attention_biases_are_a_window_bias_with_the_models_index():
    """LeViT adds a learned bias per ``(|dr|, |dc|)`` patch offset to every head's logits
    (``attention_biases`` indexed by ``attention_bias_idxs``): found as window_bias on the
    square ``r x r`` grid of each attention, whose bias is the model's own
    ``get_attention_biases``; the subsampling attentions (``(N', N)``) are left out."""
    model = support.build("levit")
    torch.manual_seed(1)
    for p in model.parameters():  # the biases start at zero: give them values
        if p.ndim == 2:
            torch.nn.init.normal_(p)
    found = find_positional_mechanisms(model)
    square = {
        name: module
        for name, module in model.named_modules()
        if hasattr(module, "attention_bias_idxs")
        and module.attention_bias_idxs.shape[0] == module.attention_bias_idxs.shape[1]
    }
    assert {m.source.rsplit(".", 1)[0] for m in found} == set(square)
    for mech in found:
        attn = square[mech.source.rsplit(".", 1)[0]]
        attn.train(True)  # the model's cache of the bias is kept in eval mode only
        want = attn.get_attention_biases(torch.device("cpu")).detach().double().numpy()
        assert mech.kind == "window_bias"
        np.testing.assert_array_equal(mech.params.bias(), want)
        side = mech.params.window[0]
        assert side * side == want.shape[1]
        assert mech.params.encodings(4, start=0, params={}) == {}  # no text positions
        with pytest.raises(PosgeomError, match="window attention"):
            family_of_mechanism("window_bias").extension.extension_from_mechanism(mech)


@pytest.mark.filterwarnings("ignore")
def test_zaya_rotates_once_its_attention_scores_are_not_all_zero():
    """Zaya's query-key temperature initialises to 0 (every score 0: no rotation can show);
    the tiny build fills all-zero parameters, as a trained checkpoint has none, and Zaya's
    rotary (its ``hybrid`` base) is found on its blocks, its angles the model's own module's."""
    model = support.build("zaya")
    assert all(bool(p.any()) for p in model.parameters())
    (mech,) = find_positional_mechanisms(model)
    assert mech.kind == "rotary" and mech.layers == (0, 1)
    assert mech.params.layer_type == "hybrid" == model.config.layer_types[0]
    assert mech.theta == model.config.rope_parameters["hybrid"]["rope_theta"]
    assert support.rotary_error(model, mech) <= 1e-6


@pytest.mark.filterwarnings("ignore")
def test_conformer_relative_sinusoids_kept_in_buffers_are_found():
    """FastSpeech2-Conformer keeps its relative sinusoid as a table of a row per offset
    (``pos_enc``, offsets ``M - 1 .. -(M - 1)``); Gemma 3n's audio conformer keeps the
    frequencies of its timing signal ``[sin(r w) | cos(r w)]`` (``inv_timescales``). Both are
    relative sinusoids inside attention, their vectors the models' own rows."""
    fs2 = support.build("fastspeech2_conformer")
    found = [m for m in find_positional_mechanisms(fs2) if m.kind == "sinusoidal"]
    assert [(m.stack, m.layers) for m in found] == [
        ("encoder.conformer_layers", (0, 1)),
        ("decoder.conformer_layers", (0, 1)),
    ]
    table = fs2.encoder.pos_enc.pos_enc[0].double().numpy()
    middle = table.shape[0] // 2
    offsets = np.arange(40)
    got = found[0].params.vectors(offsets)
    assert found[0].params.relative
    np.testing.assert_allclose(got, table[middle - offsets], atol=1e-5)
    audio = support.build("gemma3n_audio")
    (first, *rest) = find_positional_mechanisms(audio)
    assert first.kind == "sinusoidal" and first.params.relative and first.params.layout == "concat"
    assert all(m.kind == "sinusoidal" for m in rest)
    module = audio.conformer[0].attention.attn.relative_position_embedding
    r = torch.arange(-5, 13, dtype=torch.float32)[:, None]
    want = module._get_timing_signal_1d_pos(r, torch.float32).reshape(r.shape[0], -1)
    np.testing.assert_allclose(first.params.vectors(r[:, 0].numpy()), want.double(), atol=1e-5)


@pytest.mark.filterwarnings("ignore")
def test_lerope_learned_scales_are_read_into_the_frequencies():
    """Mistral Large 4's rotary module rotates by ``w_k exp(alpha_k)`` with a learned ``alpha``
    (zero at initialisation, trained in a checkpoint): the frequencies posgeom reports are the
    scaled ones, and agree with the module's own angles."""
    model = support.build("mistral_large4_text")
    module = model.rotary_emb
    with torch.no_grad():
        module.alpha.copy_(torch.linspace(-0.5, 0.5, module.alpha.numel()))
    (mech, *_) = find_positional_mechanisms(model)
    want = module.inv_freq.double() * module.alpha.detach().double().exp()
    np.testing.assert_allclose(mech.params.inv_freq, want.numpy(), rtol=1e-6)
    assert support.rotary_error(model, mech) <= 1e-6


@pytest.mark.filterwarnings("ignore")
def test_sam_fourier_feature_matrix_is_not_a_learned_table():
    """SAM's prompt encoder keeps ``shared_image_embedding.positional_embedding`` ``(2, m)``, a
    random Fourier-feature projection of point coordinates: the module computes
    ``[sin(2 pi (2 c - 1) W) | cos(...)]`` (checked here by hand), so its rows are the x and y
    axes, not positions: no learned table is read from it (SAM and SAM 2, where it is a
    buffer), it is named spatial_positions ("Fourier features of coordinates")."""
    for model_type in ("sam", "sam2"):
        model = support.build(model_type)
        module = copy.deepcopy(model.shared_image_embedding).double()
        w = module.positional_embedding.detach().numpy()
        coords = torch.rand(1, 1, 5, 2, dtype=torch.float64)
        expected = 2 * np.pi * (2 * coords.numpy() - 1) @ w
        with torch.no_grad():
            got = module(coords).numpy()
        np.testing.assert_allclose(
            got, np.concatenate([np.sin(expected), np.cos(expected)], -1), atol=1e-5
        )
        found = find_positional_mechanisms(model, on_missing="none")
        named = [m for m in found if m.source == "shared_image_embedding.positional_embedding"]
        assert [(m.kind, m.form, m.axes, m.width) for m in named] == [
            ("spatial_positions", "Fourier features of coordinates", 2, 2 * w.shape[1])
        ], model_type
        assert all(m.kind != "learned" for m in found)


def _refused(mech):
    """Every use of a geometry refuses ``mech`` in one line naming its kind."""
    with pytest.raises(PosgeomError, match=mech.kind):
        mech.to_encoding(8)
    with pytest.raises(PosgeomError, match=mech.kind):
        family_of_mechanism(mech.kind).extension.extension_from_mechanism(mech)
    assert mechanism_encodings(mech, 8) == {}


@pytest.mark.filterwarnings("ignore")
def test_sam_decomposed_relative_positions_are_the_models_rows_per_offset():
    """SAM's ViT attention adds, per query and key patch, the vectors of their row offset and
    column offset (``rel_pos_h`` / ``rel_pos_w``, ``(2 S - 1, head_dim)``): one
    relative_embeddings entry per table and block, row ``r + S - 1`` the model's own vector of
    offset ``r`` as its ``get_rel_pos`` picks it; refused (no geometry)."""
    model = support.build("sam_vision_model")
    found = [m for m in find_positional_mechanisms(model) if m.kind == "relative_embeddings"]
    layers = model.vision_encoder.layers
    assert [(m.source.rsplit(".", 1)[-1], m.layers) for m in found] == [
        (name, (i,)) for i in range(len(layers)) for name in ("rel_pos_h", "rel_pos_w")
    ]
    for mech in found:
        attn = model.get_submodule(mech.source.rsplit(".", 1)[0])
        size = (mech.table.shape[0] + 1) // 2
        assert mech.max_relative_positions == size - 1
        with torch.no_grad():
            picked = attn.get_rel_pos(size, size, getattr(attn, mech.source.rsplit(".", 1)[-1]))
        i, j = np.indices((size, size))
        np.testing.assert_array_equal(picked.double().numpy(), mech.table[i - j + size - 1])
        assert mech.axis == {"rel_pos_h": "height", "rel_pos_w": "width"}[mech.source[-9:]]
        _refused(mech)


def _grid(model):
    grids = [m for m in find_positional_mechanisms(model) if m.kind == "spatial_positions"]
    assert [m.form for m in grids] == ["learned 2-D grid"]
    param = model.get_parameter(grids[0].source)
    assert tuple(grids[0].shape) == tuple(param.shape) and param.ndim == 4
    _refused(grids[0])
    return param


@pytest.mark.filterwarnings("ignore")
def test_sam_learned_position_grid_is_named_and_is_what_the_model_adds():
    """SAM's ``pos_embed`` ``(1, H, W, d)`` is a named spatial_positions grid with the
    parameter's shape: the first block's input minus the patch embedding is that grid (captured
    from the model's forward); refused."""
    model = support.build("sam_vision_model").eval()
    param = _grid(model)
    encoder = model.vision_encoder
    torch.manual_seed(0)
    seen = {}
    hook = encoder.layers[0].register_forward_pre_hook(lambda m, a: seen.update(x=a[0]))
    with torch.no_grad():
        param.normal_()
        size = model.config.image_size
        pixels = torch.randn(1, model.config.num_channels, size, size)
        model(pixel_values=pixels)
        patches = encoder.patch_embed(pixels)
    hook.remove()
    np.testing.assert_allclose((seen["x"] - patches).numpy(), param.detach().numpy(), atol=1e-5)


@pytest.mark.filterwarnings("ignore")
def test_hiera_learned_position_grid_is_named_and_resampled_by_the_model():
    """Hiera's ``pos_embed`` ``(1, d, 7, 7)`` (SAM 2's backbone) is a named spatial_positions
    grid with the parameter's shape; the model resamples it bicubically to the feature map
    (with the window table zeroed, its ``_get_pos_embed`` is ``F.interpolate`` of the grid,
    computed here); refused."""
    model = support.build("sam2_vision_model").eval()
    param = _grid(model)
    backbone = model.backbone
    torch.manual_seed(0)
    with torch.no_grad():
        param.normal_()
        backbone.pos_embed_window.zero_()
        got = backbone._get_pos_embed((16, 16))
        want = torch.nn.functional.interpolate(param, size=(16, 16), mode="bicubic")
    np.testing.assert_allclose(got.numpy(), want.permute(0, 2, 3, 1).numpy(), atol=1e-6)


@pytest.mark.filterwarnings("ignore")
def test_vjepa2_rotary_over_frame_row_and_column_is_named_per_block():
    """V-JEPA 2's attention rotates queries and keys by each patch's (frame, row, column),
    computed inside the attention (no inv_freq buffer): named spatial_positions with 3 axes;
    the model's position ids are the raster decomposition of the patch index (computed here
    from its grid), and its rotation is the identity at position 0 and not elsewhere."""
    model = support.build("vjepa2").eval()
    found = [m for m in find_positional_mechanisms(model) if m.kind == "spatial_positions"]
    assert {(m.form, m.axes) for m in found} == {("rotary over grid axes", 3)}
    attn = model.get_submodule(found[0].source)
    assert not list(attn.named_buffers())
    g = attn.grid_size
    n = 2 * g * g
    ids = attn.get_position_ids(torch.zeros(1, n, 1))
    p = np.arange(n)
    expected = (p // (g * g), (p % (g * g)) // g, p % g)
    for got, want in zip(ids, expected, strict=True):
        np.testing.assert_array_equal(got.numpy(), want)
    qk = torch.randn(1, attn.num_attention_heads, n, attn.attention_head_size)
    zeros = tuple(torch.zeros_like(t) for t in ids)
    with torch.no_grad():
        np.testing.assert_allclose(attn.apply_rotary_embeddings(qk, zeros), qk, atol=1e-6)
        assert not torch.allclose(attn.apply_rotary_embeddings(qk, ids), qk)
    assert found[0].width == attn.attention_head_size
    _refused(found[0])


@pytest.mark.filterwarnings("ignore")
def test_d_fine_sine_of_the_feature_grid_is_named_with_its_temperature():
    """D-FINE's encoder adds a 2-D sine table of the feature map computed in the forward:
    ``[sin(h w_k) | cos(h w_k) | sin(x w_k) | cos(x w_k)]``, ``w_k = T^(-k / (d / 4))``
    (computed here by hand from the reading's temperature and width, against the module)."""
    model = support.build("d_fine").eval()
    (mech,) = [m for m in find_positional_mechanisms(model) if m.kind == "spatial_positions"]
    assert mech.form == "2-D sine" and mech.axes == 2
    module = model.get_submodule(mech.source)
    got = module(width=5, height=3, device=torch.device("cpu"), dtype=torch.float64)[0].numpy()
    d, t = mech.width, mech.base
    w = t ** -(np.arange(d // 4) / (d // 4))
    h, x = (a.ravel()[:, None] * w for a in np.indices((3, 5)))
    np.testing.assert_allclose(
        got, np.concatenate([np.sin(h), np.cos(h), np.sin(x), np.cos(x)], 1), atol=1e-12
    )
    _refused(mech)


@pytest.mark.filterwarnings("ignore")
def test_lightglue_keypoint_rotary_is_named_as_a_rotation_of_coordinates():
    """LightGlue rotates queries and keys by a learned projection of each keypoint's (x, y),
    values and not token order: named spatial_positions ("rotary of keypoint coordinates"),
    its cosines ``cos(W k)`` with each angle repeated twice (computed here from the projector's
    weight); refused."""
    model = support.build("lightglue").eval()
    found = [m for m in find_positional_mechanisms(model) if m.kind == "spatial_positions"]
    assert {(m.form, m.source) for m in found} == {
        ("rotary of keypoint coordinates", "positional_encoder")
    }
    module = model.positional_encoder
    weight = module.projector.weight.detach().double().numpy()
    assert (found[0].axes, found[0].width) == weight.shape[::-1]
    keypoints = torch.rand(1, 6, 2)
    with torch.no_grad():
        cos, sin = module(keypoints)[0]
    angles = np.repeat(keypoints.double().numpy() @ weight.T, 2, axis=-1)
    np.testing.assert_allclose(cos.double().numpy(), np.cos(angles), atol=1e-5)
    np.testing.assert_allclose(sin.double().numpy(), np.sin(angles), atol=1e-5)
    _refused(found[0])


def test_fnet_complex_dft_buffers_are_not_read_as_sinusoids():
    """FNet's TPU path keeps its DFT matrices as complex buffers (``(127, 127)``: the odd length
    of a row-per-offset table); they mix tokens, they are not a positional sinusoid, and reading
    them as one cast away their imaginary part with a torch warning. Its learned table stays."""
    config = transformers.FNetConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        intermediate_size=32,
        max_position_embeddings=128,
        use_tpu_fourier_optimizations=True,
        tpu_short_seq_length=127,
    )
    model = transformers.FNetModel(config)
    assert any(b.is_complex() and b.shape == (127, 127) for b in model.buffers())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = find_positional_mechanisms(model)
    assert [m.kind for m in found] == ["learned"]
