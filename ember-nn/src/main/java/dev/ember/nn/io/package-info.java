/**
 * Weight files: {@link dev.ember.nn.io.SafeTensors} saves and loads state dicts as safetensors,
 * the format PyTorch and Hugging Face use, validating every file strictly before allocating
 * anything ({@link dev.ember.nn.io.SafeTensorsException} names the file, byte and tensor of each
 * problem). Never Java serialization: {@code ObjectInputStream} on an untrusted file runs code.
 */
package dev.ember.nn.io;
