/**
 * Quantized modules and model conversion, on the int8 tensors and observers of {@code dev.ember.quant} and the int8
 * kernels of the backend SPI.
 *
 * <p><b>Dynamic</b>: {@link dev.ember.nn.quant.Quantize#dynamic} replaces Linear and LSTM layers by
 * {@link dev.ember.nn.quant.DynamicQuantizedLinear} and {@link dev.ember.nn.quant.DynamicQuantizedLSTM} (int8
 * weights, activations quantized per call, float output).
 *
 * <p><b>Static</b> (post-training, PyTorch's eager {@code prepare} / calibrate / {@code convert}):
 * {@link dev.ember.nn.quant.Quantize#prepare} wraps each Linear, Conv2d, LinearReLU and ConvReLU2d in a
 * {@link dev.ember.nn.quant.PreparedLayer} whose observers ({@link dev.ember.nn.quant.QConfig}) record the ranges of
 * its input and output while calibration data runs through the model; {@link dev.ember.nn.quant.Quantize#convert}
 * replaces them by {@link dev.ember.nn.quant.QuantizedLinear}, {@link dev.ember.nn.quant.QuantizedLinearReLU},
 * {@link dev.ember.nn.quant.QuantizedConv2d} and {@link dev.ember.nn.quant.QuantizedConvReLU2d}: int8 weights,
 * fixed input and output parameters, int32 accumulation and requantization in the GEMM's output loop
 * ({@link dev.ember.backend.Backend#int8LinearRequantize}; convolution through a k-major int8 im2col and
 * {@link dev.ember.backend.Backend#int8ConvRequantize}, weight times columns, so that few output channels do not
 * leave the kernel's panels empty and the result lands in NCHW). Each layer's weight is an
 * {@link dev.ember.backend.Int8Matrix}, packed on its first forward and kept until the buffers change.
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
 * modules.
 *
 * <p><b>Saved layout.</b> Quantized layers keep their state in buffers, so {@code stateDict()}, safetensors files
 * and checkpoints carry a quantized model. A {@link dev.ember.nn.quant.DynamicQuantizedLinear} named {@code NAME}
 * is:
 * <table>
 *   <caption>State of a dynamically quantized Linear</caption>
 *   <tr><th>key</th><th>dtype</th><th>shape</th><th>meaning</th></tr>
 *   <tr><td>{@code NAME.weight}</td><td>I8</td><td>[out, in]</td><td>int8 weight, per output channel</td></tr>
 *   <tr><td>{@code NAME.weight_scale}</td><td>F32</td><td>[out]</td><td>scale of each row, &gt; 0</td></tr>
 *   <tr><td>{@code NAME.weight_zero_point}</td><td>I32</td><td>[out]</td><td>0 (symmetric weights)</td></tr>
 *   <tr><td>{@code NAME.bias}</td><td>F32</td><td>[out]</td><td>float bias, absent without one</td></tr>
 * </table>
 * The static layers ({@link dev.ember.nn.quant.QuantizedLinear}, {@link dev.ember.nn.quant.QuantizedLinearReLU},
 * {@link dev.ember.nn.quant.QuantizedConv2d}, {@link dev.ember.nn.quant.QuantizedConvReLU2d}) have {@code NAME.weight}
 * (I8, [out, in] or [out, in / groups, kH, kW]), {@code NAME.weight_scale} (F32, [out] per channel or [1] per tensor),
 * {@code NAME.weight_zero_point} (I32, zeros), {@code NAME.bias} (F32 [out], absent without one), and the activation
 * parameters {@code NAME.input_scale}, {@code NAME.input_zero_point}, {@code NAME.scale}, {@code NAME.zero_point}
 * (output; F32 [1] and I32 [1], torch's names); their activation dtypes come from the converted architecture, so load
 * into a model prepared and converted with the same {@link dev.ember.nn.quant.QConfig}.
 * A {@link dev.ember.nn.quant.DynamicQuantizedLSTM} has the same three entries for each of its weights
 * ({@code weight_ih_l0}, {@code weight_ih_l0_scale}, {@code weight_ih_l0_zero_point}, {@code weight_hh_l0}, ..., with
 * {@code _reverse} for the backward direction) and F32 {@code bias_ih_l0}, {@code bias_hh_l0}, ...
 * The real weight is {@code (weight - weight_zero_point) * weight_scale} row by row. To load a file, quantize a
 * fresh float model of the same architecture with {@link dev.ember.nn.quant.Quantize#dynamic} and call
 * {@code loadStateDict}: the outputs are the saved model's bit for bit. Entries of the wrong dtype or with invalid
 * values throw {@link dev.ember.nn.quant.QuantizedStateException} naming the key, before anything is copied.
 */
package dev.ember.nn.quant;
