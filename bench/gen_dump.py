#!/usr/bin/env python3
# Synthetic dump-pair generator used by bench/run.py (msProbe PyTorch dump layout).
"""Synthetic generator for a PAIR of msprobe PyTorch-format dumps (target/ and golden/).

The layout and JSON schema follow what msprobe's PyTorch dumper writes
(task statistics / tensor, summary_mode statistics / md5, level "mix"):

  OUT/target/step0/rank<r>/dump.json       {"task","level","framework","dump_data_dir","data":{...}}
  OUT/target/step0/rank<r>/stack.json      {"0": [[names...], [frames...]], ...}  (forward entries)
  OUT/target/step0/rank<r>/construct.json  {entry_name: parent_module_name_or_null}
  OUT/target/step0/rank<r>/dump_tensor_data/<entry>.<input|output|parameters>.<idx..>.pt  (tensor mode)
  OUT/golden/...                           same structure; golden = target + noise

(--proc-dir writes step0/proc<pid>/ instead of rank0/, as the dumper does when
torch.distributed is not initialised; only valid with --ranks 1.)

The synthetic network is transformer-like (embedding, L layers of RMSNorm /
attention / LayerNorm / MLP with tensor-parallel linears and all_reduce, final
norm, lm_head, cross-entropy), run forward then backward.  dump.json therefore
holds Functional.*, Tensor.*, Torch.*, Distributed.* and Module.* entries,
forward and backward, Module "parameters" and "parameters_grad" entries, and
1-4 inputs mixing tensors with ints, floats, bools, lists, slices, None,
torch.dtype, ReduceOp and ProcessGroup arguments.

--apis N is the number of entries ("data" keys) in each rank's dump.json: the
entry list (all forward entries, then backward entries) is truncated to N.
Every tensor has --tensor-elems elements (except the 0-d loss), so in tensor
mode the data per side is about n_tensors * E * itemsize; totals are printed.

--mismatch-frac F renames that fraction of the TARGET entries (API name gets a
"_x" suffix, a Module's class name gets an "X" suffix) consistently in
dump.json, stack.json, construct.json and the .pt file names, so they do not
match anything on the golden side.

--perturb EPS: golden tensors = target + EPS * N(0,1) noise (tensor mode: real
data; statistics mode: the statistics that such noise would give; md5 mode: a
different crc32).  --perturb-frac P applies it to a fraction P of tensors
(default 1.0); the rest are identical on both sides.

Only numpy and torch (tensor mode) are needed; deterministic for a given --seed.

  python gen_dump.py --mode statistics --apis 10000 --out /tmp/bench/s10k
  python gen_dump.py --mode tensor --apis 765 --tensor-elems 65536 --out /tmp/bench/t05   # ~2000 x 256 KB = 0.52 GB/side
  msprobe compare -tp /tmp/bench/s10k/target/step0 -gp /tmp/bench/s10k/golden/step0 -o out/
"""
import argparse
import json
import math
import os
import shutil
import time
import zlib

import numpy as np

TORCH_DTYPE_NAME = {"float32": "torch.float32", "bfloat16": "torch.bfloat16", "float16": "torch.float16",
                    "int64": "torch.int64", "bool": "torch.bool"}


def f32(x):
    """Python float of the float32 value (what tensor.item() gives for fp32 stats)."""
    return float(np.float32(x))


def factor_shape(elems, kind, salt):
    """A plausible shape whose product is `elems`."""
    if kind == "scalar":
        return []
    if kind in ("b", "ids1"):
        return [elems]
    h = 1
    while h * 2 <= math.isqrt(max(elems, 1)) and elems % (h * 2) == 0:
        h *= 2
    rest = elems // h
    if kind in ("w", "ids", "mask"):
        return [rest, h]
    b = 2 if rest % 2 == 0 and rest > 2 else 1
    if b == 1:
        return [rest, h]
    if salt % 3 == 0:
        return [rest // b, b, h]  # sequence-first layout (Megatron style)
    return [b, rest // b, h]


# ----------------------------------------------------------------------------- argument specs


class T:
    """A tensor argument.  kind: act|w|b|ids|ids1|mask|scalar; rg: requires_grad."""

    __slots__ = ("kind", "rg", "dtype")

    def __init__(self, kind="act", rg=True, dtype=None):
        self.kind = kind
        self.rg = rg
        self.dtype = dtype  # None -> --dtype

    def has_grad(self):
        return self.rg and self.dtype is None and self.kind != "scalar"


def I(v):  # noqa: E743
    return ("int", v)


def F(v):
    return ("float", v)


def B(v):
    return ("bool", v)


def S(v):
    return ("str", v)


def SL(a, b, c=None):
    return ("slice", [a, b, c])


def DT(v):
    return ("torch.dtype", v)


NONE = ("none",)


class Call:
    """One forward entry (API or module)."""

    __slots__ = ("name", "args", "kwargs", "outs", "params", "parent", "stack_key", "backward", "is_module")

    def __init__(self, name, args, kwargs, outs, params, parent, stack_key, backward, is_module):
        self.name = name
        self.args = args
        self.kwargs = kwargs or {}
        self.outs = outs if outs is not None else [T()]
        self.params = params
        self.parent = parent
        self.stack_key = stack_key
        self.backward = backward
        self.is_module = is_module


# ----------------------------------------------------------------------------- network


class Net:
    """Ordered list of forward calls, in the order msprobe writes them (inner APIs first)."""

    def __init__(self, ranks):
        self.counters = {}
        self.calls = []
        self.group = ("torch.ProcessGroup", list(range(ranks)))

    def api(self, prefix, op, args, kwargs=None, outs=None, parent=None, backward=True, site=""):
        key = f"{prefix}.{op}"
        n = self.counters.get(key, 0)
        self.counters[key] = n + 1
        # same source line in every layer -> same stack (as in real dumps)
        ctx = parent.split(".forward.")[0].split(".")[-1] if parent else "top"
        c = Call(f"{key}.{n}.forward", args, kwargs, outs, None, parent, ("api", key, ctx, site), backward, False)
        self.calls.append(c)
        return c

    def module(self, path, cls, args, params=None, outs=None, parent=None, body=None):
        key = f"Module.{path}.{cls}"
        n = self.counters.get(key, 0)
        self.counters[key] = n + 1
        name = f"{key}.forward.{n}"
        if body:
            body(name)
        c = Call(name, args, {}, outs, params, parent, ("mod", cls, path.split(".")[-1]), True, True)
        self.calls.append(c)
        return c

    def rmsnorm(self, path, parent):
        def body(me):
            self.api("Tensor", "pow", [T(), I(2)], parent=me)
            self.api("Tensor", "mean", [T()], {"dim": [I(-1)], "keepdim": B(True)}, parent=me)
            self.api("Torch", "rsqrt", [T()], parent=me)
            self.api("Tensor", "mul", [T(), T()], parent=me, site="a")
            self.api("Tensor", "mul", [T(), T("b")], parent=me, site="b")
        self.module(path, "RMSNorm", [T()], params={"weight": T("b")}, parent=parent, body=body)

    def layernorm(self, path, parent):
        def body(me):
            self.api("Functional", "layer_norm", [T(), [I(4096)], T("b"), T("b"), F(1e-5)], parent=me)
        self.module(path, "LayerNorm", [T()], params={"weight": T("b"), "bias": T("b")}, parent=parent, body=body)

    def linear(self, path, cls, parent, bias=True, tp_reduce=False):
        def body(me):
            self.api("Functional", "linear", [T(), T("w"), T("b") if bias else NONE], parent=me)
            if tp_reduce:
                red = ("torch.distributed.ReduceOp", "RedOpType.SUM")
                self.api("Distributed", "all_reduce", [T(rg=False)], {"op": red, "group": self.group},
                         outs=[T(rg=False), red], parent=me, backward=False)
        params = {"weight": T("w")}
        if bias:
            params["bias"] = T("b")
        self.module(path, cls, [T()], params=params, parent=parent, body=body)

    def attention(self, path, parent):
        def body(me):
            self.linear(f"{path}.linear_qkv", "ColumnParallelLinear", me)
            self.api("Tensor", "split", [T(), I(128)], {"dim": I(-1)}, outs=[T(), T(), T()], parent=me)
            self.api("Tensor", "transpose", [T(), I(0), I(1)], parent=me)
            self.api("Torch", "baddbmm", [T(), T(), T()], {"beta": F(0.0), "alpha": F(0.08838834764831845)},
                     parent=me)
            self.api("Functional", "softmax", [T()], {"dim": I(-1), "dtype": DT("torch.float32")}, parent=me)
            self.api("Functional", "dropout", [T()], {"p": F(0.1), "training": B(True)}, parent=me)
            self.api("Torch", "bmm", [T(), T()], parent=me)
            self.api("Tensor", "permute", [T(), I(2), I(0), I(1)], parent=me)
            self.api("Tensor", "reshape", [T(), [I(-1), I(2), I(512)]], parent=me)
            self.linear(f"{path}.linear_proj", "RowParallelLinear", me, bias=False, tp_reduce=True)
        self.module(path, "SelfAttention", [T(), T("mask", rg=False, dtype="bool")], outs=[T(), NONE],
                    parent=parent, body=body)

    def mlp(self, path, parent):
        def body(me):
            self.linear(f"{path}.linear_fc1", "ColumnParallelLinear", me)
            self.api("Torch", "chunk", [T(), I(2)], {"dim": I(-1)}, outs=[T(), T()], parent=me)
            self.api("Functional", "silu", [T()], parent=me)
            self.api("Tensor", "__mul__", [T(), T()], parent=me)
            self.linear(f"{path}.linear_fc2", "RowParallelLinear", me, bias=False, tp_reduce=True)
        self.module(path, "MLP", [T()], parent=parent, body=body)

    def layer(self, i):
        path = f"model.layers.{i}"

        def body(me):
            self.rmsnorm(f"{path}.input_layernorm", me)
            self.attention(f"{path}.self_attention", me)
            self.api("Tensor", "__add__", [T(), T()], parent=me)
            self.layernorm(f"{path}.pre_mlp_layernorm", me)
            self.mlp(f"{path}.mlp", me)
            self.api("Tensor", "add", [T(), T()], {"alpha": I(1)}, parent=me)
            self.api("Tensor", "to", [T(), DT("torch.float32")], parent=me)
            self.api("Tensor", "__getitem__", [T(), [SL(None, None), SL(0, 2048)]], parent=me)
            self.api("Torch", "cat", [[T(), T()]], {"dim": I(-1)}, parent=me)
        self.module(path, "TransformerLayer", [T(), T("mask", rg=False, dtype="bool")], outs=[T(), NONE],
                    parent=None, body=body)

    def head(self):
        def body(me):
            self.api("Functional", "embedding",
                     [T("ids", rg=False, dtype="int64"), T("w"), NONE, NONE, F(2.0), B(False), B(False)], parent=me)
        self.module("model.embedding.word_embeddings", "VocabParallelEmbedding", [T("ids", rg=False, dtype="int64")],
                    params={"weight": T("w")}, parent=None, body=body)

    def tail(self):
        self.rmsnorm("model.final_layernorm", None)
        self.linear("model.output_layer", "ColumnParallelLinear", None, bias=False)
        self.api("Functional", "cross_entropy", [T(), T("ids1", rg=False, dtype="int64")],
                 {"ignore_index": I(-100), "reduction": S("mean")}, outs=[T("scalar")])

    def backward_order(self):
        """(name, kind, call): post-order over the module tree, children reversed."""
        children, roots = {}, []
        for c in self.calls:
            (children.setdefault(c.parent, []) if c.parent else roots).append(c)
        out = []

        def visit(c):
            if c.is_module:
                for ch in reversed(children.get(c.name, [])):
                    visit(ch)
                if c.params:
                    out.append((c.name.replace(".forward.", ".parameters_grad."), "params_grad", c))
                out.append((c.name.replace(".forward.", ".backward."), "backward", c))
            elif c.backward:
                out.append((c.name[: -len(".forward")] + ".backward", "backward", c))

        for r in reversed(roots):
            visit(r)
        return out


def entries_per_layer():
    n = Net(1)
    n.layer(0)
    return len(n.calls) + len(n.backward_order())


def build_network(n_entries, ranks):
    per = entries_per_layer()
    layers = max(1, math.ceil(max(n_entries - 30, 1) / per))
    net = Net(ranks)
    net.head()
    for i in range(layers):
        net.layer(i)
    net.tail()
    entries = [(c.name, "forward", c) for c in net.calls] + net.backward_order()
    return entries[:n_entries], layers


# ----------------------------------------------------------------------------- rename (mismatch)


def rename(name):
    p = name.split(".")
    if p[0] == "Module":
        p[-3] += "X"
    else:
        p[1] += "_x"
    return ".".join(p)


# ----------------------------------------------------------------------------- materialisation


class Side:
    def __init__(self, root, rank, use_proc, pid):
        sub = f"proc{pid}" if use_proc else f"rank{rank}"
        self.dir = os.path.join(root, "step0", sub)
        self.data_dir = os.path.join(self.dir, "dump_tensor_data")
        self.data = {}
        self.construct = {}
        self.bytes = 0
        self.files = 0


class Gen:
    def __init__(self, a, rank):
        self.a = a
        self.mode = a.mode
        self.E = a.tensor_elems
        seed = (a.seed * 1000003 + rank * 7919) & 0x7FFFFFFF
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.tcount = 0
        self._buf = None
        self._bi = 0
        self.pthr = _norm_ppf(a.perturb_frac)
        if self.mode == "tensor":
            import torch
            torch.set_num_threads(1)  # tiny ops: intra-op threads only add spin/sync overhead
            self.torch = torch
            self.tgen = torch.Generator().manual_seed(seed)
            self.tdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[a.dtype]

    def _rand(self, k):
        if self._buf is None or self._bi + k > len(self._buf):
            self._buf = self.rng.standard_normal(1 << 16)
            self._bi = 0
        r = self._buf[self._bi: self._bi + k]
        self._bi += k
        return r

    # -- one tensor ------------------------------------------------------------
    def tensor(self, spec, t_name, g_name, bwd, tside, gside):
        a = self.a
        dt = spec.dtype or a.dtype
        elems = 1 if spec.kind == "scalar" else self.E
        self.tcount += 1
        shape = factor_shape(elems, spec.kind, self.tcount)
        rg = False if bwd else spec.rg
        perturbed = dt not in ("int64", "bool") and a.perturb > 0 and self._rand(1)[0] < self.pthr
        if self.mode == "tensor":
            ts, gs = self._real(spec.kind, dt, shape, elems, perturbed, t_name, g_name, tside, gside)
        else:
            ts, gs = self._fake(spec.kind, dt, elems, perturbed)
        tj = {"type": "torch.Tensor", "dtype": TORCH_DTYPE_NAME[dt], "shape": shape}
        gj = dict(tj)
        tj.update(ts)
        gj.update(gs)
        tj["requires_grad"] = rg
        gj["requires_grad"] = rg
        if self.mode == "md5":
            h = f"{zlib.crc32(f'{self.seed}:{self.tcount}'.encode()):08x}"
            tj["md5"] = h
            gj["md5"] = f"{zlib.crc32(f'{self.seed}:{self.tcount}:g'.encode()):08x}" if perturbed else h
        elif self.mode == "tensor":
            tj["data_name"] = t_name
            gj["data_name"] = g_name
        return tj, gj

    def _fake(self, kind, dt, elems, perturbed):
        r = self._rand(8)
        if dt == "bool":
            s = {"Max": True, "Min": False, "Mean": None, "Norm": None}
            return s, dict(s)
        if dt == "int64":
            s = {"Max": int(abs(r[0]) * 10000) + 20000, "Min": int(abs(r[1]) * 10), "Mean": None, "Norm": None}
            return s, dict(s)
        sigma = float(np.exp(r[2] * 1.5 - 1.0))
        eps = self.a.perturb
        if kind == "scalar":
            v = f32(abs(r[3]) * sigma + 3.0)
            t = {"Max": v, "Min": v, "Mean": v, "Norm": v}
            if perturbed:
                v2 = f32(v + eps * r[4])
                return t, {"Max": v2, "Min": v2, "Mean": v2, "Norm": v2}
            return t, dict(t)
        mean = r[3] * 0.1 * sigma
        mx = mean + sigma * (3.0 + abs(r[4]))
        mn = mean - sigma * (3.0 + abs(r[5]))
        norm = math.sqrt(elems * (sigma * sigma + mean * mean))
        t = {"Max": f32(mx), "Min": f32(mn), "Mean": f32(mean), "Norm": f32(norm)}
        if not perturbed:
            return t, dict(t)
        g = {"Max": f32(mx + eps * (1.0 + abs(r[6]))), "Min": f32(mn - eps * (1.0 + abs(r[7]))),
             "Mean": f32(mean + eps * r[6] / math.sqrt(elems)),
             "Norm": f32(math.sqrt(norm * norm + elems * eps * eps))}
        return t, g

    def _real(self, kind, dt, shape, elems, perturbed, t_name, g_name, tside, gside):
        torch = self.torch
        g = self.tgen
        if dt == "int64":
            x = torch.randint(0, 32000, (elems,), generator=g, dtype=torch.int64).reshape(shape)
            y = x
        elif dt == "bool":
            x = (torch.rand(elems, generator=g) > 0.5).reshape(shape)
            y = x
        else:
            sigma = float(np.exp(self._rand(1)[0] - 1.0))
            x32 = torch.randn(elems, generator=g, dtype=torch.float32).mul_(sigma)
            if kind == "scalar":
                x32.abs_().add_(3.0)
            x = x32.to(self.tdtype).reshape(shape)
            if perturbed:
                n32 = torch.randn(elems, generator=g, dtype=torch.float32).mul_(self.a.perturb)
                y = (x32.to(self.tdtype).to(torch.float32) + n32).to(self.tdtype).reshape(shape)
            else:
                y = x
        torch.save(x.clone().contiguous(), os.path.join(tside.data_dir, t_name))
        torch.save(y.clone().contiguous(), os.path.join(gside.data_dir, g_name))
        nb = x.numel() * x.element_size()
        tside.bytes += nb
        gside.bytes += nb
        tside.files += 1
        gside.files += 1
        return _stats(x), _stats(y)

    # -- structures -------------------------------------------------------------
    def value(self, spec, t_prefix, g_prefix, suffix, bwd, tside, gside):
        """Materialise one argument spec into (target_json, golden_json)."""
        if isinstance(spec, T):
            sfx = ".".join(str(s) for s in suffix)
            tn = f"{t_prefix}.{sfx}.pt" if sfx else f"{t_prefix}.pt"
            gn = f"{g_prefix}.{sfx}.pt" if sfx else f"{g_prefix}.pt"
            return self.tensor(spec, tn, gn, bwd, tside, gside)
        if isinstance(spec, list):
            tl, gl = [], []
            for i, s in enumerate(spec):
                t, g = self.value(s, t_prefix, g_prefix, suffix + [i], bwd, tside, gside)
                tl.append(t)
                gl.append(g)
            return tl, gl
        if isinstance(spec, dict):
            td, gd = {}, {}
            for k, s in spec.items():
                td[k], gd[k] = self.value(s, t_prefix, g_prefix, suffix + [k], bwd, tside, gside)
            return td, gd
        kind = spec[0]
        if kind == "none":
            return None, None
        if kind == "torch.ProcessGroup":
            ranks = spec[1]
            d = {"type": "torch.ProcessGroup", "group_ranks": ranks,
                 "group_id": f"{zlib.crc32(str(ranks).encode('utf-8')):08x}"}
            return d, dict(d)
        if kind == "slice":
            d = {"type": "slice", "value": spec[1]}
            return d, dict(d)
        d = {"type": kind, "value": spec[1]}
        return d, dict(d)


def _norm_ppf(p):
    """Threshold on a standard normal draw so that P(z < thr) = p (p in [0,1])."""
    if p >= 1:
        return float("inf")
    if p <= 0:
        return float("-inf")
    # Acklam's rational approximation is overkill; bisection on erf is fine here.
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _stats(t):
    import torch
    if t.dtype == torch.bool:
        return {"Max": bool(t.any()), "Min": bool(t.all()), "Mean": None, "Norm": None}
    if t.dim() == 0:
        v = t.item()
        return {"Max": v, "Min": v, "Mean": v, "Norm": v}
    if not t.is_floating_point():
        return {"Max": t.max().item(), "Min": t.min().item(), "Mean": None, "Norm": None}
    return {"Max": t.max().item(), "Min": t.min().item(), "Mean": t.mean().item(), "Norm": t.norm().item()}


# ----------------------------------------------------------------------------- stacks


def make_stack(key, rng):
    """Deterministic, realistic-looking Python stack for one source location."""
    h = zlib.crc32(repr(key).encode())
    depth = 8 + h % 17
    site = key[1] if len(key) > 1 else "x"
    frames = []
    libs = ["/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py",
            "/usr/local/lib/python3.11/site-packages/megatron/core/transformer/transformer_layer.py",
            "/usr/local/lib/python3.11/site-packages/megatron/core/transformer/attention.py",
            "/usr/local/lib/python3.11/site-packages/megatron/core/tensor_parallel/layers.py",
            "/usr/local/lib/python3.11/site-packages/megatron/core/transformer/mlp.py",
            "/workspace/Megatron-LM/megatron/training/training.py",
            "/workspace/Megatron-LM/pretrain_gpt.py"]
    funcs = ["_call_impl", "_wrapped_call_impl", "forward", "inner", "forward_step", "train_step", "train",
             "pretrain", "<module>"]
    for i in range(depth):
        f = libs[(h >> (i % 16)) % len(libs)] if i else libs[(h + 3) % 4 + 1]
        fn = funcs[(h + i * 7) % len(funcs)]
        line = 100 + (h * (i + 1)) % 1900
        code = f"output = self.{site.split('.')[-1].strip('_')}(hidden_states, attention_mask)" if i == 0 else \
            "return forward_call(*args, **kwargs)"
        frames.append(f"File {f}, line {line}, in {fn}, \n {code}")
    return frames


# ----------------------------------------------------------------------------- main


def gen_rank(a, rank, entries, pid):
    gen = Gen(a, rank)
    rng = np.random.default_rng(a.seed + 17 * rank + 1)
    tside = Side(os.path.join(a.out, "target"), rank, a.proc_dir, pid)
    gside = Side(os.path.join(a.out, "golden"), rank, a.proc_dir, pid + 1)
    for s in (tside, gside):
        os.makedirs(s.dir, exist_ok=True)
        if a.mode == "tensor":
            os.makedirs(s.data_dir, exist_ok=True)

    # which target entries get renamed (decided per entry, deterministic)
    renamed = {}
    if a.mismatch_frac > 0:
        mrng = np.random.default_rng(a.seed * 31 + rank)
        pick = mrng.random(len(entries)) < a.mismatch_frac
        for (name, _, _), p in zip(entries, pick):
            if p:
                renamed[name] = rename(name)

    def tname(n):
        return renamed.get(n, n)

    stacks = {}  # stack_key -> (frames, [target names], [golden names])
    for name, kind, c in entries:
        tn, gn = tname(name), name
        if kind == "forward":
            ta, ga = gen.value(c.args, f"{tn}.input", f"{gn}.input", [], False, tside, gside)
            tk, gk = gen.value(c.kwargs, f"{tn}.input", f"{gn}.input", [], False, tside, gside)
            to, go = gen.value(c.outs, f"{tn}.output", f"{gn}.output", [], False, tside, gside)
            te = {"input_args": ta, "input_kwargs": tk, "output": to}
            ge = {"input_args": ga, "input_kwargs": gk, "output": go}
            if c.params:
                tp, gp = gen.value(c.params, f"{tn}.parameters", f"{gn}.parameters", [], False, tside, gside)
                te["parameters"] = tp
                ge["parameters"] = gp
            st = stacks.get(c.stack_key)
            if st is None:
                st = stacks[c.stack_key] = (make_stack(c.stack_key, rng), [], [])
            st[1].append(tn)
            st[2].append(gn)
            tside.construct[tn] = tname(c.parent) if c.parent else None
            gside.construct[gn] = c.parent
        elif kind == "backward":
            # input = grads of the forward outputs, output = grads of the forward inputs
            g_in = [T("scalar" if o.kind == "scalar" else "act", rg=False) for o in c.outs if isinstance(o, T)]
            if c.is_module:
                g_out = [T(rg=False) if isinstance(x, T) and x.has_grad() else NONE for x in c.args]
            else:
                g_out = [T(rg=False) if isinstance(x, T) and x.has_grad() else NONE for x in c.args
                         if not isinstance(x, (list, dict))]
                for x in c.args:
                    if isinstance(x, list) and x and isinstance(x[0], T):
                        g_out.extend(T(rg=False) for _ in x)
            while g_out and g_out[-1] is NONE:
                g_out.pop()
            ti, gi = gen.value(g_in, f"{tn}.input", f"{gn}.input", [], True, tside, gside)
            to, go = gen.value(g_out, f"{tn}.output", f"{gn}.output", [], True, tside, gside)
            te = {"input": ti, "output": to}
            ge = {"input": gi, "output": go}
            tside.construct[tn] = tname(_bwd_parent(c.parent)) if c.parent else None
            gside.construct[gn] = _bwd_parent(c.parent) if c.parent else None
        else:  # params_grad: {"weight": [stat], ...}, files <entry>.<param>.pt
            te, ge = {}, {}
            for pname in reversed(list(c.params)):
                # msprobe names these files <entry>.<param>.pt (no list index)
                t, g = gen.tensor(T(c.params[pname].kind, rg=False), f"{tn}.{pname}.pt", f"{gn}.{pname}.pt", True,
                                  tside, gside)
                te[pname], ge[pname] = [t], [g]
        tside.data[tn] = te
        gside.data[gn] = ge

    for side, idx in ((tside, 1), (gside, 2)):
        dump = {"task": "tensor" if a.mode == "tensor" else "statistics", "level": "mix", "framework": "pytorch",
                "dump_data_dir": side.data_dir if a.mode == "tensor" else None, "data": side.data}
        with open(os.path.join(side.dir, "dump.json"), "w") as f:
            json.dump(dump, f, indent=1)
        stack_json = {str(i): [st[idx], st[0]] for i, st in enumerate(stacks.values())}
        with open(os.path.join(side.dir, "stack.json"), "w") as f:
            json.dump(stack_json, f, indent=1)
        with open(os.path.join(side.dir, "construct.json"), "w") as f:
            json.dump(side.construct, f, indent=1)
    return tside, gside, gen.tcount, len(renamed)


def _bwd_parent(p):
    return p.replace(".forward.", ".backward.")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["statistics", "tensor", "md5"], default="statistics")
    ap.add_argument("--apis", type=int, default=1000, help="entries per rank in dump.json (default 1000)")
    ap.add_argument("--tensor-elems", type=int, default=4096, help="elements per tensor (default 4096)")
    ap.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    ap.add_argument("--ranks", type=int, default=1, help="writes step0/rank0..rankR-1 (default 1)")
    ap.add_argument("--proc-dir", action="store_true", help="write step0/proc<pid>/ instead of rank0 (ranks=1)")
    ap.add_argument("--perturb", type=float, default=1e-3, help="golden = target + EPS*N(0,1) (default 1e-3)")
    ap.add_argument("--perturb-frac", type=float, default=1.0, help="fraction of tensors perturbed (default 1)")
    ap.add_argument("--mismatch-frac", type=float, default=0.0, help="fraction of target entries renamed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--force", action="store_true", help="remove OUT/target and OUT/golden first")
    a = ap.parse_args(argv)
    if a.proc_dir and a.ranks != 1:
        ap.error("--proc-dir needs --ranks 1")
    for sub in ("target", "golden"):
        p = os.path.join(a.out, sub)
        if os.path.exists(p):
            if not a.force:
                ap.error(f"{p} exists (use --force)")
            shutil.rmtree(p)
    t0 = time.time()
    entries, layers = build_network(a.apis, a.ranks)
    tot_bytes = tot_files = tot_t = tot_ren = 0
    for r in range(a.ranks):
        ts, gs, nt, nr = gen_rank(a, r, entries, 10000 + 2 * a.seed)
        tot_bytes += ts.bytes
        tot_files += ts.files
        tot_t += nt
        tot_ren += nr
        js = os.path.getsize(os.path.join(ts.dir, "dump.json"))
        print(f"rank{r}: {len(entries)} entries ({nr} renamed), {nt} tensors, dump.json {js / 1e6:.1f} MB"
              + (f", tensor data {ts.bytes / 1e9:.3f} GB in {ts.files} files per side" if a.mode == "tensor" else ""),
              flush=True)
    print(f"done: mode={a.mode} layers={layers} ranks={a.ranks} entries/rank={len(entries)} tensors/side={tot_t} "
          f"renamed={tot_ren} data/side={tot_bytes / 1e9:.3f} GB files/side={tot_files} "
          f"time={time.time() - t0:.1f}s out={a.out}")


if __name__ == "__main__":
    main()
