/**
 * Quantized modules and model conversion: {@link dev.ember.nn.quant.Quantize#dynamic},
 * {@link dev.ember.nn.quant.DynamicQuantizedLinear} and {@link dev.ember.nn.quant.DynamicQuantizedLSTM}, on the int8
 * tensors and observers of {@code dev.ember.quant} and the int8 GEMM of the CPU backend.
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
 * A {@link dev.ember.nn.quant.DynamicQuantizedLSTM} has the same three entries for each of its weights
 * ({@code weight_ih_l0}, {@code weight_ih_l0_scale}, {@code weight_ih_l0_zero_point}, {@code weight_hh_l0}, ..., with
 * {@code _reverse} for the backward direction) and F32 {@code bias_ih_l0}, {@code bias_hh_l0}, ...
 * The real weight is {@code (weight - weight_zero_point) * weight_scale} row by row. To load a file, quantize a
 * fresh float model of the same architecture with {@link dev.ember.nn.quant.Quantize#dynamic} and call
 * {@code loadStateDict}: the outputs are the saved model's bit for bit. Entries of the wrong dtype or with invalid
 * values throw {@link dev.ember.nn.quant.QuantizedStateException} naming the key, before anything is copied.
 */
package dev.ember.nn.quant;
