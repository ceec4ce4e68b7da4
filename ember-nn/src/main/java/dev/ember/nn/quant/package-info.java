/**
 * Quantized modules and model conversion, on the int8 tensors and observers of {@code dev.ember.quant} and the int8
 * kernels of the backend SPI.
 *
 * <p><b>Dynamic</b>: {@link dev.ember.nn.quant.Quantize#dynamic} replaces Linear layers by
 * {@link dev.ember.nn.quant.DynamicQuantizedLinear} (int8 weights, activations quantized per batch, float output).
 *
 * <p><b>Static</b> (post-training, PyTorch's eager {@code prepare} / calibrate / {@code convert}):
 * {@link dev.ember.nn.quant.Quantize#prepare} wraps each Linear, Conv2d, LinearReLU and ConvReLU2d in a
 * {@link dev.ember.nn.quant.PreparedLayer} whose observers ({@link dev.ember.nn.quant.QConfig}) record the ranges of
 * its input and output while calibration data runs through the model; {@link dev.ember.nn.quant.Quantize#convert}
 * replaces them by {@link dev.ember.nn.quant.QuantizedLinear}, {@link dev.ember.nn.quant.QuantizedLinearReLU},
 * {@link dev.ember.nn.quant.QuantizedConv2d} and {@link dev.ember.nn.quant.QuantizedConvReLU2d}: int8 weights,
 * fixed input and output parameters, int32 accumulation and requantization in the GEMM's output loop
 * ({@link dev.ember.backend.Backend#int8LinearRequantize}; convolution through an int8 im2col).
 *
 * <p><b>How values travel.</b> Quantized modules keep {@link dev.ember.nn.Module}'s Tensor -&gt; Tensor contract:
 * between quantized layers the activations are float32 tensors whose values lie exactly on the producing layer's
 * output grid, {@code (q - zeroPoint) * scale}. The next layer reads its input with the producer's output parameters
 * (convert links them), so its quantize step recovers q exactly: the values are those of torch's int8 pipeline, value
 * for value, and the pattern is ONNX's QuantizeLinear/DequantizeLinear (QDQ). ReLU, MaxPool2d, Flatten and Dropout
 * in eval commute with this (they keep values on the grid) and stay as they are. The model-input quantize step is the
 * first layer's: a layer whose input does not come from a quantized layer through such ops (the model input, or
 * after e.g. an add) quantizes it with the parameters its own input observer chose. The float32 output of the last
 * layer is its int8 output dequantized (torch's {@code DeQuantStub}).
 *
 * <p><b>Quantization-aware training</b>: {@link dev.ember.nn.quant.Quantize#prepareQat} wraps the same layers with
 * {@link dev.ember.nn.quant.FakeQuantize} on weights, inputs and outputs (rounding in forward, straight-through
 * gradient), training runs as usual, and {@link dev.ember.nn.quant.Quantize#convert} gives the same quantized
 * modules. The quantized weights are not (yet) part of the state dict.
 */
package dev.ember.nn.quant;
