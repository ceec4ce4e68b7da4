/**
 * Int8 quantization primitives, as PyTorch's {@code torch.quantize_per_tensor}/{@code quantize_per_channel} and
 * {@code torch.ao.quantization} observers: {@link dev.ember.quant.QTensor} (int8 values with a
 * {@link dev.ember.quant.QParams} scale and zero point, per tensor or per channel), {@link dev.ember.quant.Quantization}
 * (quantize/dequantize with fbgemm's rounding) and the calibration observers
 * ({@link dev.ember.quant.MinMaxObserver}, {@link dev.ember.quant.MovingAverageMinMaxObserver},
 * {@link dev.ember.quant.PerChannelMinMaxObserver}, {@link dev.ember.quant.HistogramObserver}), all matching torch 1.13
 * bit for bit, and {@link dev.ember.quant.PercentileObserver}, which clips the histogram's range at a percentile.
 *
 * <p>This package is in ember-core, beside the int8 GEMM ({@link dev.ember.backend.Backend#int8LinearDequantize}) that consumes its
 * tensors, because both are tensor-level and need no modules; the modules that use them
 * ({@code dev.ember.nn.quant.DynamicQuantizedLinear}, {@code Quantize}) are in ember-nn. A {@link dev.ember.quant.QTensor}
 * is its own class rather than a {@code DType.I8} {@code Tensor}: quantized values are meaningless without their
 * scale and zero point, and no autograd op accepts them, so they stay out of the op table.
 */
package dev.ember.quant;
