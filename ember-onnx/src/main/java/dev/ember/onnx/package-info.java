/**
 * ONNX export of Ember models: {@link dev.ember.onnx.Onnx#export} traces a forward pass through the
 * model's layers and writes an opset-17 ONNX model whose batch dimension is dynamic, with the weights as
 * initializers. The protobuf classes ({@code dev.ember.onnx.proto.OnnxProto}) are generated at build time
 * from ONNX's own {@code onnx.proto}.
 */
package dev.ember.onnx;
