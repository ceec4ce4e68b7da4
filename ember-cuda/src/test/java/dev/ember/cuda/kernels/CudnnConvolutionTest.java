package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.ConvGeometry;
import dev.ember.tensor.DType;
import org.junit.jupiter.api.Test;

/** Which convolutions go to cuDNN (no GPU needed). */
class CudnnConvolutionTest {
  private static ConvGeometry geometry(int h, int w, int k, int s, int p, int d) {
    int o = CudnnConvolution.gridSize(h, k, s, p, d);
    return new ConvGeometry(h, w, k, k, s, s, p, p, d, d, o, CudnnConvolution.gridSize(w, k, s, p, d));
  }

  @Test
  void gridSizeIsTorchsOutputSize() {
    assertEquals(28, CudnnConvolution.gridSize(28, 5, 1, 2, 1));
    assertEquals(14, CudnnConvolution.gridSize(28, 3, 2, 1, 1));
    assertEquals(5, CudnnConvolution.gridSize(11, 3, 2, 0, 1));
    assertEquals(7, CudnnConvolution.gridSize(11, 3, 1, 0, 2));
    assertEquals(-1, CudnnConvolution.gridSize(2, 5, 1, 0, 1));
  }

  @Test
  void float32AndTheHalvesWithSymmetricPaddingGoToCudnn() {
    ConvGeometry g = geometry(32, 32, 3, 1, 1, 1);
    for (DType t : new DType[] {DType.F32, DType.BF16, DType.F16}) {
      assertTrue(CudnnConvolution.supports(t, 64, 3, 32, g), t.torchName());
    }
    assertTrue(CudnnConvolution.supports(DType.F32, 3, 4, 6, geometry(11, 7, 3, 2, 0, 2)));
  }

  @Test
  void float64AsymmetricPaddingAndHugeTensorsStayOnIm2col() {
    ConvGeometry g = geometry(32, 32, 3, 1, 1, 1);
    assertFalse(CudnnConvolution.supports(DType.F64, 64, 3, 32, g), "float64");
    // 'same' padding of an even kernel: one row and column of padding at the top and left only
    ConvGeometry same = new ConvGeometry(8, 8, 2, 2, 1, 1, 1, 1, 1, 1, 8, 8);
    assertFalse(CudnnConvolution.supports(DType.F32, 2, 3, 4, same), "asymmetric padding");
    assertFalse(CudnnConvolution.supports(DType.F32, 1 << 16, 64, 64, g), "more than 2^31 elements");
    assertFalse(CudnnConvolution.supports(DType.F32, 0, 3, 4, g), "an empty batch");
  }
}
