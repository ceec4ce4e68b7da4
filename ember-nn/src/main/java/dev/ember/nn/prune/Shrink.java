package dev.ember.nn.prune;

import dev.ember.autograd.Grad;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.BatchNormBase;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** Structured pruning that shrinks a {@link Sequential}: {@link Prune#shrinkOutputs}. */
final class Shrink {
  private Shrink() {}

  static Sequential outputs(Sequential model, int layerIndex, int[] keep) {
    String op = "shrinkOutputs";
    if (model == null) throw new IllegalArgumentException(op + ": model is null");
    if (layerIndex < 0 || layerIndex >= model.size()) {
      throw new IllegalArgumentException(op + ": layer index " + layerIndex + " out of range for a Sequential of "
          + model.size() + " layers");
    }
    List<Module> layers = new ArrayList<>();
    List<String> labels = new ArrayList<>();
    for (int i = 0; i < model.size(); i++) {
      layers.add(model.get(i));
      labels.add("layer " + i);
    }
    rewrite(layers, labels, layerIndex, keep);
    Sequential out = new Sequential(layers);
    out.train(model.isTraining());
    return out;
  }

  /** {@code model}'s leaf modules by name, in registration order (the order they run in for a Sequential tree). */
  static Map<String, Module> leaves(Module model) {
    Map<String, Module> out = new java.util.LinkedHashMap<>();
    model.namedModules().forEach((name, m) -> {
      if (m.namedChildren().isEmpty() && !name.isEmpty()) out.put(name, m);
    });
    return out;
  }

  /** The error for a layer name {@code model} has no leaf of, listing those it has. */
  static IllegalArgumentException noLayer(String op, Module model, String layerName, java.util.Collection<String> names) {
    return new IllegalArgumentException(op + ": " + model.name() + " has no layer '" + layerName + "'; has " + names);
  }

  /** In place: the model's leaves, in registration order, are its layers in the order they run. */
  static Module outputs(Module model, String layerName, int[] keep) {
    String op = "shrinkOutputs";
    if (model == null) throw new IllegalArgumentException(op + ": model is null");
    Map<String, Module> leaves = leaves(model);
    List<String> names = new ArrayList<>(leaves.keySet());
    List<Module> layers = new ArrayList<>(leaves.values());
    List<String> labels = new ArrayList<>();
    for (String name : names) labels.add("layer '" + name + "'");
    int index = names.indexOf(layerName);
    if (index < 0) throw noLayer(op, model, layerName, names);
    List<Module> rewritten = new ArrayList<>(layers);
    rewrite(rewritten, labels, index, keep);
    Map<String, Module> all = model.namedModules();
    for (int i = 0; i < names.size(); i++) {
      if (rewritten.get(i) == layers.get(i)) continue;
      String name = names.get(i);
      int dot = name.lastIndexOf('.');
      Module parent = all.get(dot < 0 ? "" : name.substring(0, dot));
      parent.replaceChild(name.substring(dot + 1), rewritten.get(i));
    }
    return model;
  }

  /** Rebuilds {@code layers[layerIndex]} with the outputs {@code keep} and the layers after it that consume them. */
  private static void rewrite(List<Module> layers, List<String> labels, int layerIndex, int[] keep) {
    String op = "shrinkOutputs";
    Module layer = layers.get(layerIndex);
    String label = labels.get(layerIndex);
    int outs;
    if (layer instanceof Linear lin) {
      outs = lin.outFeatures();
    } else if (layer instanceof Conv2d conv && conv.groups() == 1) {
      outs = conv.outChannels();
    } else {
      throw new IllegalArgumentException(op + ": " + label + " must be a Linear or a Conv2d with groups=1, got "
          + layer);
    }
    checkKeep(op, keep, outs, label, layer);
    layers.set(layerIndex, select(layer, keep, 0));

    boolean flattened = false;  // after a Flatten() each channel is a block of the next Linear's inputs
    for (int i = layerIndex + 1; i < layers.size(); i++) {
      Module m = layers.get(i);
      String where = labels.get(i) + " (" + m.name() + ")";
      if (m instanceof BatchNormBase bn && !flattened) {
        if (bn.numFeatures() != outs) {
          throw new IllegalArgumentException(op + ": " + where + " normalizes " + bn.numFeatures() + " features, not the "
              + outs + " outputs of " + label);
        }
        layers.set(i, batchNorm(bn, keep));
      } else if (m instanceof Linear lin) {
        int block = 1;
        if (flattened) {
          if (lin.inFeatures() % outs != 0) {
            throw new IllegalArgumentException(op + ": " + where + " takes " + lin.inFeatures() + " inputs, not a multiple"
                + " of the " + outs + " channels of " + label + " flattened");
          }
          block = lin.inFeatures() / outs;
        } else if (lin.inFeatures() != outs) {
          throw new IllegalArgumentException(op + ": " + where + " takes " + lin.inFeatures() + " inputs, not the "
              + outs + " outputs of " + label);
        }
        int[] cols = new int[keep.length * block];
        for (int k = 0; k < keep.length; k++) for (int j = 0; j < block; j++) cols[k * block + j] = keep[k] * block + j;
        layers.set(i, select(lin, cols, 1));
        return;
      } else if (m instanceof Conv2d conv && !flattened) {
        if (conv.groups() != 1 || conv.inChannels() != outs) {
          throw new IllegalArgumentException(op + ": " + where + " must take the " + outs + " channels of " + label
              + " with groups=1, got " + conv);
        }
        layers.set(i, select(conv, keep, 1));
        return;
      } else if (m instanceof Flatten && m.toString().equals("Flatten(start_dim=1, end_dim=-1)") && !flattened) {
        flattened = true;
      } else if (m.parameters().isEmpty() && m.namedBuffers().isEmpty() && !(m instanceof Flatten)
          && m.namedChildren().isEmpty()) {
        continue;  // per-channel layers without state: activations, pooling, dropout
      } else {
        throw new IllegalArgumentException(op + ": cannot carry the removal of outputs of " + label
            + " through " + where + ": " + m + "; hint: only BatchNorm, stateless per-channel layers, Flatten() and "
            + "then the next Linear or Conv2d are rewritten");
      }
    }
  }

  private static void checkKeep(String op, int[] keep, int outs, String label, Module layer) {
    if (keep == null || keep.length == 0) {
      throw new IllegalArgumentException(op + ": keep at least one of the " + outs + " outputs of " + label
          + " (" + layer.name() + ")");
    }
    for (int k = 0; k < keep.length; k++) {
      if (keep[k] < 0 || keep[k] >= outs || (k > 0 && keep[k] <= keep[k - 1])) {
        throw new IllegalArgumentException(op + ": keep must be increasing indices in [0, " + outs + ") for "
            + label + " (" + layer.name() + "), got " + Arrays.toString(keep));
      }
    }
  }

  private static Tensor index(int[] idx) {
    long[] l = new long[idx.length];
    for (int i = 0; i < idx.length; i++) l[i] = idx[i];
    return Tensor.of(l, idx.length);
  }

  /** A copy of {@code layer} keeping {@code idx} along {@code dim} of its weight (0: outputs, with the bias; 1: inputs). */
  private static Module select(Module layer, int[] idx, int dim) {
    Tensor w = layer.param("weight");
    Tensor b = layer.hasParam("bias") ? layer.param("bias") : null;
    Generator gen = new Generator(0);  // the fresh layer's initial values are overwritten
    Module fresh;
    if (layer instanceof Linear lin) {
      int in = dim == 1 ? idx.length : lin.inFeatures();
      int out = dim == 0 ? idx.length : lin.outFeatures();
      fresh = new Linear(in, out, b != null, gen);
    } else {
      Conv2d c = (Conv2d) layer;
      int in = dim == 1 ? idx.length : c.inChannels();
      int out = dim == 0 ? idx.length : c.outChannels();
      fresh = c.paddingString() != null
          ? new Conv2d(in, out, c.kernelSize(), c.stride(), c.paddingString(), c.dilation(), 1, b != null,
              c.paddingMode(), gen)
          : new Conv2d(in, out, c.kernelSize(), c.stride(), c.padding(), c.dilation(), 1, b != null, c.paddingMode(),
              gen);
    }
    fresh.to(w.dtype()).to(w.device());
    try (Grad ignored = Grad.off()) {
      Tensor i = index(idx).to(w.device());
      fresh.param("weight").copy_(w.indexSelect(dim, i));
      if (b != null) fresh.param("bias").copy_(dim == 0 ? b.indexSelect(0, i) : b);
    }
    fresh.param("weight").requiresGrad(w.requiresGrad());
    fresh.train(layer.isTraining());
    return fresh;
  }

  private static Module batchNorm(BatchNormBase bn, int[] keep) {
    if (!(bn instanceof BatchNorm2d) && !(bn instanceof BatchNorm1d)) {
      throw new IllegalArgumentException("shrinkOutputs: cannot rebuild " + bn.name() + " with fewer features: " + bn);
    }
    BatchNormBase fresh = bn instanceof BatchNorm2d
        ? new BatchNorm2d(keep.length, bn.eps(), bn.momentum(), bn.affine(), bn.trackRunningStats())
        : new BatchNorm1d(keep.length, bn.eps(), bn.momentum(), bn.affine(), bn.trackRunningStats());
    DType dtype = bn.affine() ? bn.weight().dtype() : bn.runningMean().dtype();
    fresh.to(dtype).to(bn.device());
    try (Grad ignored = Grad.off()) {
      Tensor i = index(keep).to(bn.device());
      for (String p : List.of("weight", "bias")) {
        if (bn.hasParam(p)) fresh.param(p).copy_(bn.param(p).indexSelect(0, i));
      }
      if (bn.trackRunningStats()) {
        for (String b : List.of("running_mean", "running_var")) fresh.buffer(b).copy_(bn.buffer(b).indexSelect(0, i));
        fresh.buffer("num_batches_tracked").copy_(bn.buffer("num_batches_tracked"));
      }
    }
    fresh.train(bn.isTraining());
    return fresh;
  }
}
