package dev.ember.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Json;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * HistogramObserver and PercentileObserver against torch 1.13 (histogram_fixture.json, written by
 * make_histogram_fixture.py beside it, which says which cases run torch's observer unchanged and which with its
 * int() truncation of the histc range removed): the histogram after every batch sequence and its range bit for bit,
 * the range the L2 search picks and the scale and zero point; for the percentile observer, the clipped range and the
 * parameters, and the nearest-rank percentile of the values (sorted by torch) within one bin width.
 */
class HistogramObserverTorchTest {
  private static Map<String, Object> fixture() throws IOException, Json.SyntaxError {
    return JsonFixture.load(HistogramObserverTorchTest.class, "histogram_fixture.json");
  }

  private static int num(Map<?, ?> c, String k) {
    return (int) ((Number) c.get(k)).longValue();
  }

  private static float flt(Object o) {
    return (float) ((Number) o).doubleValue();
  }

  private static HistogramObserver observer(Map<?, ?> c, Double percentile) {
    QDType t = "qint8".equals(c.get("dtype")) ? QDType.QINT8 : QDType.QUINT8;
    QScheme s = new QScheme(t, "symmetric".equals(c.get("scheme")), -1);
    int bins = num(c, "bins");
    int up = num(c, "upsample_rate");
    boolean rr = Boolean.TRUE.equals(c.get("reduce_range"));
    List<?> qr = (List<?>) c.get("quant_range");
    if (percentile != null) {
      assertEquals(HistogramObserver.DEFAULT_UPSAMPLE_RATE, up);
      return qr == null ? new PercentileObserver(percentile, bins, s, rr)
          : new PercentileObserver(percentile, bins, s, ((Number) qr.get(0)).intValue(), ((Number) qr.get(1)).intValue());
    }
    return qr == null ? new HistogramObserver(bins, up, s, rr)
        : new HistogramObserver(bins, up, s, ((Number) qr.get(0)).intValue(), ((Number) qr.get(1)).intValue());
  }

  private static void observeAll(HistogramObserver obs, Map<?, ?> c) {
    for (Object b : (List<?>) c.get("batches")) {
      float[] v = JsonFixture.floats(b);
      Tensor x = Tensor.of(v, v.length);
      assertSame(x, obs.observe(x));
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void histogramObserverMatchesTorch() throws Exception {
    List<Object> cases = (List<Object>) fixture().get("histogram");
    assertEquals(13, cases.size());
    for (Object o : cases) {
      Map<String, Object> c = (Map<String, Object>) o;
      String what = (String) c.get("name");
      HistogramObserver obs = observer(c, null);
      observeAll(obs, c);
      assertEquals(flt(c.get("min_val")), obs.minVal(), what + ": min_val");
      assertEquals(flt(c.get("max_val")), obs.maxVal(), what + ": max_val");
      assertArrayEquals(JsonFixture.floats(c.get("histogram")), obs.histogram(), what + ": histogram");
      assertArrayEquals(JsonFixture.floats(c.get("search")), obs.searchRange(), what + ": _non_linear_param_search");
      QParams p = obs.calculateQParams();
      assertEquals(flt(c.get("scale")), p.scales()[0], what + ": scale");
      assertEquals(num(c, "zero_point"), p.zeroPoints()[0], what + ": zero_point");
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void percentileObserverMatchesTorchsHistogramAndQuantile() throws Exception {
    Map<String, Object> f = fixture();
    List<Object> hist = (List<Object>) f.get("histogram");
    List<Object> cases = (List<Object>) f.get("percentile");
    assertEquals(4, cases.size());
    int exact = 0;
    for (Object o : cases) {
      Map<String, Object> pc = (Map<String, Object>) o;
      Map<String, Object> c = (Map<String, Object>) hist.get(num(pc, "case"));
      double p = ((Number) pc.get("percentile")).doubleValue();
      String what = c.get("name") + " p=" + p;
      HistogramObserver obs = observer(c, p);
      observeAll(obs, c);
      assertArrayEquals(JsonFixture.floats(c.get("histogram")), obs.histogram(), what + ": histogram");
      float[] range = obs.searchRange();
      float[] want = JsonFixture.floats(pc.get("range"));
      assertArrayEquals(want, range, what + ": clipped range");
      QParams q = obs.calculateQParams();
      assertEquals(flt(pc.get("scale")), q.scales()[0], what + ": scale");
      assertEquals(num(pc, "zero_point"), q.zeroPoints()[0], what + ": zero_point");
      if (pc.containsKey("nearest_rank")) {  // one batch: within a bin width of the nearest-rank percentile
        exact++;
        double width = ((double) obs.maxVal() - obs.minVal()) / obs.bins();
        float[] e = JsonFixture.floats(pc.get("nearest_rank"));
        assertEquals(e[0], range[0], width, what + ": lower percentile vs the nearest-rank one");
        assertEquals(e[1], range[1], width, what + ": upper percentile vs the nearest-rank one");
        assertTrue(range[0] > obs.minVal() && range[1] < obs.maxVal(), what + ": the outliers are clipped");
      }
    }
    assertEquals(2, exact);
  }
}
