"""An independent reference for the modern_llm decoder, written from
/work/shared/MODEL.md (the "Forward pass" section) with plain torch ops.

Functional on purpose: `weights` is a dict name -> tensor with MODEL.md's
state-dict keys, `config` a dict with MODEL.md's config fields (defaults
filled in here). No module state, no dropout (evaluation only), so that
every step can be read against MODEL.md line by line. It shares no code with
CkptScope's C++ model or with resources/demo.
"""

import math

import torch
import torch.nn.functional as F

DEFAULTS = {
    "rmsnorm_eps": 1e-5,
    "dropout": 0.0,
    "initializer_range": 0.02,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "use_rope": True,
    "use_attention_sinks": True,
    "num_attention_sinks": 2,
    "use_gqa": False,
    "gqa_groups": None,
    "use_moe": False,
    "tie_embeddings": True,
}


def full_config(config):
    c = dict(DEFAULTS)
    c.update(config)
    if c["use_moe"]:
        raise ValueError("MoE layers cannot be run")
    return c


def rms_norm(x, weight, eps):
    # y = x * rsqrt(mean(x^2 over the last axis) + eps) * weight
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def swiglu(x, gate_w, gate_b, proj_w, proj_b):
    g = F.linear(x, gate_w, gate_b)
    a, b = g.chunk(2, dim=-1)  # first half, second half
    return F.linear(F.silu(a) * b, proj_w, proj_b)


def rope_tables(positions, head_dim, theta, scaling):
    """cos/sin [len(positions), head_dim], each angle repeated twice in place."""
    j = torch.arange(head_dim // 2, dtype=torch.float32)
    inv_freq = 1.0 / (theta ** (2.0 * j / head_dim))
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]
    if scaling is not None:
        angles = angles * scaling
    # [c0, c0, c1, c1, ...]
    cos = torch.stack([angles.cos(), angles.cos()], dim=-1).flatten(-2)
    sin = torch.stack([angles.sin(), angles.sin()], dim=-1).flatten(-2)
    return cos, sin


def rotate(x):
    # rot(x) = concat(-x[half:], x[:half]): the halves pair up, unlike the tables
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + rotate(x) * sin


def split_heads(t, n_heads, head_dim):
    # [..., L, n*hd] -> [..., n, L, hd]
    *lead, length, _ = t.shape
    return t.reshape(*lead, length, n_heads, head_dim).transpose(-3, -2)


def attention(x, w, prefix, c, bias):
    B, T, d = x.shape
    n_heads = c["n_heads"]
    head_dim = d // n_heads
    kv_heads = c["gqa_groups"] if c["use_gqa"] else n_heads
    S = c["num_attention_sinks"] if c["use_attention_sinks"] else 0

    q = split_heads(F.linear(x, w[prefix + "q_proj.weight"]), n_heads, head_dim)
    k = split_heads(F.linear(x, w[prefix + "k_proj.weight"]), kv_heads, head_dim)
    v = split_heads(F.linear(x, w[prefix + "v_proj.weight"]), kv_heads, head_dim)

    theta, scaling = c["rope_theta"], c["rope_scaling"]
    if c["use_rope"]:
        q_pos = torch.arange(S, S + T)  # queries after the sinks (S = 0 without)
        k_pos = torch.arange(0, T)
        qc, qs = rope_tables(q_pos, head_dim, theta, scaling)
        kc, ks = rope_tables(k_pos, head_dim, theta, scaling)
        q = apply_rope(q, qc, qs)
        k = apply_rope(k, kc, ks)

    if S > 0:
        sinks = w[prefix + "sink_states"]  # [S, d]
        sk = split_heads(F.linear(sinks, w[prefix + "k_proj.weight"]), kv_heads, head_dim)
        sv = split_heads(F.linear(sinks, w[prefix + "v_proj.weight"]), kv_heads, head_dim)
        if c["use_rope"]:
            sc, ss = rope_tables(torch.arange(0, S), head_dim, theta, scaling)
            sk = apply_rope(sk, sc, ss)
        # [kv, S, hd] in front of every batch element's keys/values
        k = torch.cat([sk.unsqueeze(0).expand(B, -1, -1, -1), k], dim=2)
        v = torch.cat([sv.unsqueeze(0).expand(B, -1, -1, -1), v], dim=2)

    rep = n_heads // kv_heads
    if rep > 1:
        # consecutive: kv head 0 serves query heads 0..rep-1
        k = torch.repeat_interleave(k, rep, dim=1)
        v = torch.repeat_interleave(v, rep, dim=1)

    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim)
    if S > 0:
        bias = torch.cat([torch.zeros(B, 1, T, S, dtype=bias.dtype), bias], dim=-1)
    probs = torch.softmax(scores.float() + bias.float(), dim=-1).to(v.dtype)
    out = torch.matmul(probs, v)  # [B, heads, T, hd]
    out = out.transpose(1, 2).reshape(B, T, d)
    return F.linear(out, w[prefix + "out_proj.weight"])


def causal_bias(B, T, dtype, attention_mask=None):
    lowest = torch.finfo(dtype).min
    bias = torch.zeros(T, T, dtype=dtype)
    above = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    bias = bias.masked_fill(above, lowest)[None, None].expand(B, 1, T, T)
    if attention_mask is not None:
        pad = torch.zeros(B, 1, 1, T, dtype=dtype)
        pad = pad.masked_fill((attention_mask == 0)[:, None, None, :], lowest)
        bias = bias + pad  # "padded key positions add the same lowest value"
    return bias


def forward(weights, config, input_ids, attention_mask=None):
    """logits [B, T, vocab] for int64 input_ids [B, T] (evaluation: no dropout)."""
    c = full_config(config)
    w = weights
    B, T = input_ids.shape
    if T > c["max_seq_len"]:
        raise ValueError(f"sequence length {T} exceeds max_seq_len {c['max_seq_len']}")
    h = F.embedding(input_ids, w["token_embed.weight"])
    bias = causal_bias(B, T, h.dtype, attention_mask)
    eps = c["rmsnorm_eps"]
    for i in range(c["n_layers"]):
        p = f"blocks.{i}."
        h = h + attention(rms_norm(h, w[p + "attn_norm.weight"], eps), w, p + "attn.", c, bias)
        h = h + swiglu(rms_norm(h, w[p + "ffn_norm.weight"], eps),
                       w[p + "ffn.gate.weight"], w[p + "ffn.gate.bias"],
                       w[p + "ffn.proj.weight"], w[p + "ffn.proj.bias"])
    h = rms_norm(h, w["final_norm.weight"], eps)
    head = w["token_embed.weight"] if c["tie_embeddings"] else w["lm_head.weight"]
    return F.linear(h, head)


def loss(logits, labels):
    """Cross-entropy of logits[:, :-1] against labels[:, 1:], ignoring -100."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V).float(),
                           labels[:, 1:].reshape(-1), ignore_index=-100)


def state_dict_layout(config):
    """[(name, shape)] in MODEL.md's registration order, lm_head included."""
    c = full_config(config)
    d, H = c["d_model"], c["ffn_hidden_size"]
    hd = d // c["n_heads"]
    kv = (c["gqa_groups"] if c["use_gqa"] else c["n_heads"]) * hd
    out = [("token_embed.weight", (c["vocab_size"], d))]
    for i in range(c["n_layers"]):
        p = f"blocks.{i}."
        if c["use_attention_sinks"]:
            out.append((p + "attn.sink_states", (c["num_attention_sinks"], d)))
        out += [(p + "attn.q_proj.weight", (d, d)), (p + "attn.k_proj.weight", (kv, d)),
                (p + "attn.v_proj.weight", (kv, d)), (p + "attn.out_proj.weight", (d, d)),
                (p + "attn_norm.weight", (d,)), (p + "ffn_norm.weight", (d,)),
                (p + "ffn.gate.weight", (2 * H, d)), (p + "ffn.gate.bias", (2 * H,)),
                (p + "ffn.proj.weight", (d, H)), (p + "ffn.proj.bias", (d,))]
    out.append(("final_norm.weight", (d,)))
    out.append(("lm_head.weight", (c["vocab_size"], d)))
    return out
