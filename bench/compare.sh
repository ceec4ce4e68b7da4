#!/usr/bin/env bash
# Ember vs PyTorch on the same workloads, in one run: builds Ember if needed, then alternates
# Ember and PyTorch passes over one category (see bench/compare.py for why whole passes).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/compare.sh CATEGORY [--threads N] [--repeats N] [--passes N] [--max-wait S] [--only P,...]
                        [--peer torch113,torch210] [--no-peer] [--warmup-steps N] [--steps N] [--xmx SIZE] [--xmn SIZE] [--lean-jvm] [--training-warmup S]

  CATEGORY     gemm  sgemm, square 128..2048, the MLP training shapes and two transposed backward GEMMs
               ops   elementwise/reduction forward (1M and 64K floats), fwd+bwd with autograd, tape overhead
               nn    attention T=128..4096 (time, memory per call), LSTM layer, conv2d (LeNet, VGG, depthwise)
                     and fwd+bwd of GRU, conv1d, ConvTranspose2d, LayerNorm, GroupNorm, BatchNorm2d, max pool,
                     embedding (32k x 512) and cross-entropy over 32k classes
               optim optimizer.step() of SGD(momentum), Adam, AdamW, RMSprop, Adagrad, Lion on one f32
                     tensor of 1M and 16M elements (GB/s of state touched; Lion is Ember only), and
                     one CosineAnnealingLR step (us/call)
               training  one training step (samples/s, tokens/s) of the peer's MLPs (mlp_mnist,
                     seed_small/medium/large), lenet, convnet, transformer; MLPs also get the
                     model-FLOPs utilisation of each side against its own sgemm N=1024
               memory  peak RSS (VmHWM), RSS at start and, for Ember, peak and live heap of each
                     training workload, each in a fresh process per side (MB, lower is better)
               losses     forward+backward of each loss (us/call) at [128x10], [128x1000], [128x1], [4096]
               schedulers one lr scheduler step() on SGD with 4 param groups (us/call)
               metrics    reset+update+compute of each ember-train metric on a batch of 128 (us/call);
                          the peer is scikit-learn on the same batch (torch has no metrics library)
               callbacks  us/step and % each Trainer callback adds to an MLP training step (Ember only)
               precision  x.to(dtype) of 16M elements F32 <-> BF16/F16 (GB/s read+written); seed_large's
                          hidden layer (6656 x 6656) at batch 32 and 128: forward with F32 vs BF16 operands,
                          and forward+backward in F32 vs under BF16 autocast (GFLOP/s; the peer uses
                          torch.autocast("cpu", dtype=torch.bfloat16), bench/peers/pytorch_precision.py)
               compression  inference (us/batch) of a model and its compressed form: MLP 784-256-128-10 F32
                          vs dynamic int8 at batch 1 and 128, LeNet-5 vs 50% structured-pruned and shrunk,
                          the VGG-style convnet unfused vs BN folded vs Conv+ReLU fused
                          (bench/peers/pytorch_compression.py, quantized engine onednn)
               compile    Ember eager vs compiled (dev.ember.compile.Compiler): MLP 784-128-10 inference at
                          batch 1 and LeNet-5 at batch 1 and 64 (us/batch; PyTorch eager vs TorchScript
                          frozen, bench/peers/pytorch_compile.py), the mlp_mnist b=32 and transformer training
                          steps (ms/step; PyTorch eager on both rows), compile time per model (ms; TorchScript
                          trace+freeze) and kernels (ops) per graph before and after the passes (Ember only)
               distributed  allreduce bus bandwidth over loopback, 1 KiB .. 256 MiB with 2 and 4 processes (GB/s; the
                          peer is torch.distributed gloo), and DDP's cost: seed_medium at global batch 128 in N
                          processes x 1 thread vs 1 process x N threads (N = --threads; samples/s, both sides), with
                          Ember's allreduce ms/step, the ms/step backward waited for it and the % hidden under backward
  --threads N  threads on both sides (default 2): -Dember.threads=N for Ember, --threads N for PyTorch
  --repeats N  timed repeats per case and pass (default 3)
  --passes N   alternating ember/pytorch passes; repeats are pooled over passes (default 2)
  --max-wait S seconds each case may wait for a quiet machine (default 10)
  --only P,... only workloads or "workload/case" names starting with one of these
  --peer P,... the PyTorch peers (default torch113): torch113 is Debian's torch 1.13 from Python (the shared
               pytorch_bench.py and bench/peers/*.py); torch210 is libtorch 2.10 from the JVM through the JavaCPP
               presets (../shared/peers/torch210), run in its fast one-OpenMP-pool configuration. torch210 has
               sgemm and the training workloads, and bench/peers/Torch210Nn.java the nn rows that are one
               functional call: it runs in the gemm (square N=128..2048, 128x784x128 and 32x1024x512), training
               and nn (not lstm, gru, attention_mem) categories; the other rows and categories compare with
               torch113 alone.
               Peers run one after the other after each Ember pass, in alternating order. With two peers a row's
               "pytorch" and "ratio" are those of the FASTER peer, "pytorch_peer" names it and "peers" holds both.
               torch210 is built on first use into ${EMBER_TORCH210_CACHE:-~/.cache/ember/torch210} (needs Maven
               Central once, ~200 MB, and ~350 MB of native libraries extracted on its first run) and needs the
               Debian packages libopenblas0-openmp, libgomp1 and libjemalloc2
  --no-peer    Ember only: no PyTorch passes, "pytorch" and "ratio" null (needs no torch)
  --warmup-steps N, --steps N  memory: steps before and during the measurement (default 5, 20)
  --training-warmup S  training, compression and compile: Ember's warm-up seconds per case (default 10: the first
               case of a fresh JVM waits for C2 to compile the training path); the seed MLP cases spend them on a
               throwaway model, then time a fresh one on the peers' own schedule (BENCHMARKS.md, "How to run")
  --xmx SIZE   memory: the Ember JVM's -Xmx (default 4g, enough for seed_large with Adam); the
               memory pass runs without -Xms/AlwaysPreTouch, which would make the whole heap resident
  --xmn SIZE   memory: its young generation (default 64m), with the serial collector: the steps'
               tensors come from MemoryScope's pool, so the young generation need not grow
  --lean-jvm   training: run Ember in that same lean JVM instead of ParallelGC with a pre-touched
               1 GB heap (to check that one configuration meets both the speed and memory targets)

stdout: one JSON object per case {"category","workload","case","unit","ember","pytorch","ratio",...};
ratio > 1 means Ember is better (memory: pytorch/ember). stderr: progress and a table.
On a CPU newer than Debian's OpenBLAS 0.3.21 (both peers' GEMMs) it falls back to generic kernels; when the CPU
has AVX-512 this script then sets OPENBLAS_CORETYPE=SkylakeX for the peers (said on stderr), otherwise compare.py
warns, naming the core type. An OPENBLAS_CORETYPE already in the environment is kept and reaches both peers.
Needs: a JDK 25+ (JAVA_HOME, else /usr/lib/jvm/*), Maven, /usr/bin/python3 with torch, and the
shared peer scripts at $EMBER_PEERS or ../shared/peers relative to the repository root.
EOF
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] || { usage >&2; exit 2; }
case "$1" in
  -h|--help) usage; exit 0 ;;
  gemm|ops|nn|optim|training|memory|losses|schedulers|metrics|callbacks|precision|compression|compile|distributed) category=$1; shift ;;
  *) echo "compare.sh: unknown category '$1' (expected gemm, ops, nn, optim, training, memory, losses, schedulers, metrics, callbacks, precision, compression, compile or distributed)" >&2; usage >&2; exit 2 ;;
esac
extra=()
peer=1
peer_list=torch113
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --no-peer) peer=0; extra+=("$1"); shift ;;
    --lean-jvm) extra+=("$1"); shift ;;
    --peer)
      [ $# -ge 2 ] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }
      peer_list=$2; shift 2 ;;
    --threads|--repeats|--passes|--max-wait|--only|--warmup-steps|--steps|--xmx|--xmn|--training-warmup)
      [ $# -ge 2 ] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }
      extra+=("$1" "$2"); shift 2 ;;
    *) echo "compare.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/find-jdk.sh
. "$root/scripts/find-jdk.sh"
ember_find_jdk
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"

python=/usr/bin/python3
peer_args=(--peer "$peer_list")
IFS=',' read -r -a peer_names <<<"$peer_list"
for p in "${peer_names[@]}"; do
  case "$p" in
    torch113|torch210) ;;
    *) echo "compare.sh: unknown peer '$p' in --peer $peer_list (expected torch113 and/or torch210)" >&2; exit 2 ;;
  esac
done
# the peers that have workloads in this category (compare.py names the others on stderr)
want113=0; want210=0
if [ "$peer" = 1 ]; then
  case ",$peer_list," in *,torch113,*) want113=1 ;; esac
  case ",$peer_list," in *,torch210,*) case "$category" in gemm|training|nn) want210=1 ;; esac ;; esac
fi
if [ "$want113" = 1 ] || [ "$want210" = 1 ]; then
  peers=${EMBER_PEERS:-$root/../shared/peers}
fi
if [ "$want113" = 1 ]; then
  if ! "$python" -c 'import torch' 2>/dev/null; then
    echo "compare.sh: PyTorch is missing: '$python -c \"import torch\"' failed (Debian: apt-get install -y python3-torch)" >&2
    exit 1
  fi
  if [ ! -f "$peers/pytorch_bench.py" ] || [ ! -f "$peers/launcher.py" ]; then
    echo "compare.sh: shared PyTorch peer scripts not found at $peers (need pytorch_bench.py, launcher.py, quiet.py); set EMBER_PEERS" >&2
    exit 1
  fi
  peers="$(cd "$peers" && pwd)"
  peer_args+=(--peers "$peers")
fi
# Debian's OpenBLAS 0.3.21 does not know CPUs newer than it (e.g. Xeon model 207) and runs its generic Prescott
# kernels there, 4-6x slower: on such a CPU with AVX-512 the peers get OpenBLAS's SkylakeX kernels, as a user tuning
# PyTorch would choose, so that the peer figures are not understated.
if [ "$peer" = 1 ] && [ -z "${OPENBLAS_CORETYPE:-}" ] \
    && [ "$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | grep -ow 'avx512f\|avx512bw\|avx512dq\|avx512vl' | sort -u | wc -l)" = 4 ]; then
  core="$("$python" -c 'import ctypes; b = ctypes.CDLL("libopenblas.so.0"); b.openblas_get_corename.restype = ctypes.c_char_p; print(b.openblas_get_corename().decode())' 2>/dev/null || true)"
  if [ "$core" = Prescott ]; then
    export OPENBLAS_CORETYPE=SkylakeX
    echo "compare.sh: OpenBLAS does not know this AVX-512 CPU (it chose Prescott): the peers run with OPENBLAS_CORETYPE=SkylakeX" >&2
  fi
fi
if [ "$want210" = 1 ]; then
  torch210=$(ember_torch210_build "$root" "$peers/torch210") || exit 1
  peer_args+=(--torch210-dir "$torch210")
fi

# rebuild when any main source or pom is newer than the bench classes (tests are not needed here)
classpath=$(ember_bench_build "$root") || exit 1

exec "$python" "$root/bench/compare.py" "$category" "${extra[@]}" --java "$JAVA_HOME/bin/java" \
  --classpath "$classpath" "${peer_args[@]}" --python "$python"
