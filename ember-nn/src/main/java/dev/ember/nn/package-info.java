/**
 * Neural-network building blocks on top of ember-core: {@link dev.ember.nn.Module} and its
 * containers, layers with PyTorch's semantics and default initialisation, initialisers
 * ({@code dev.ember.nn.init}), functional ops and losses ({@code dev.ember.nn.functional}) and
 * safetensors weight files ({@code dev.ember.nn.io}).
 */
package dev.ember.nn;
