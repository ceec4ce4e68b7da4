/**
 * Quantized modules and model conversion: {@link dev.ember.nn.quant.Quantize#dynamic} and
 * {@link dev.ember.nn.quant.DynamicQuantizedLinear}, on the int8 tensors and observers of {@code dev.ember.quant}
 * and the int8 GEMM of the CPU backend. The quantized weights are not (yet) part of the state dict.
 */
package dev.ember.nn.quant;
