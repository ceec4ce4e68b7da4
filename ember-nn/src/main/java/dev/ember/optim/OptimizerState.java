package dev.ember.optim;

import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * An optimizer's checkpoint in PyTorch's {@code state_dict()} layout: {@code state} maps the index
 * of a parameter (counted across groups in order) to its named state tensors (moments, buffers and
 * the 0-d {@code step} counter); {@code paramGroups} holds each group's hyperparameters plus
 * {@code "params"}, the list of its parameter indices. The tensors are copies owned by this object.
 */
public record OptimizerState(Map<Integer, Map<String, Tensor>> state, List<Map<String, Object>> paramGroups) {}
