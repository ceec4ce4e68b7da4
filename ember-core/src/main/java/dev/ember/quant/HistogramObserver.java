package dev.ember.quant;

import dev.ember.tensor.Tensor;

/**
 * A running histogram of every value observed, and parameters chosen to minimize the L2 quantization error rather
 * than to cover the whole range, as {@code torch.ao.quantization.HistogramObserver} (torch 1.13; the default scheme
 * there and here is per-tensor affine quint8):
 * <ul>
 *   <li>the first batch sets the range {@code [min, max]} and is counted into {@code bins} equal bins (2048 by
 *       default) as {@code torch.histc} does: bin {@code (int) ((x - min) * bins / (max - min))} in float32, the
 *       last bin closed; a constant batch is counted over {@code [v - 1, v + 1]};</li>
 *   <li>a later batch inside the range adds its counts; one that widens it makes a new range of {@code
 *       downsample_rate} times the old one's width (only the max is relaxed, so a one-sided range keeps its 0), counts
 *       itself into that range's bins, and the old histogram is re-binned into it: each old bin is spread evenly over
 *       {@code upsample_rate} (128) sub-bins placed on the new grid, and every run of {@code downsample_rate} sub-bins
 *       is summed into one new bin (torch's {@code _adjust_min_max} and {@code _combine_histograms}, with their
 *       float32 and float64 steps);</li>
 *   <li>{@link #calculateQParams} searches, as torch's {@code _non_linear_param_search} (from Caffe2's norm
 *       minimization), for a sub-range of bins: the lower and upper quantiles advance by 1e-5 from 0 and 1, each step
 *       moving the end whose bin boundary moves more, and the search stops as soon as the L2 error of quantizing the
 *       histogram's (piecewise uniform) density into 256 levels over the sub-range grows; the parameters of that
 *       range follow {@link Observer}'s formulas.</li>
 * </ul>
 * One difference from torch 1.13: its {@code forward} passes {@code int(min)} and {@code int(max)} to {@code
 * torch.histc}, which drops the values outside the truncated range and counts the rest on a grid that is not the
 * observer's (torch 2 passes the float range); this observer counts over the float range, as torch 2. The values
 * are checked against torch 1.13's code with that truncation removed (HistogramObserverTorchTest).
 *
 * <p>A batch with NaN or an infinite value is rejected (torch.histc rejects a range that is not finite).
 */
public class HistogramObserver extends Observer {
  /** torch's default number of bins. */
  public static final int DEFAULT_BINS = 2048;
  /** torch's default upsampling of the old histogram when the range grows. */
  public static final int DEFAULT_UPSAMPLE_RATE = 128;

  private final int bins;
  private final int upsampleRate;
  /** The levels the search quantizes into: 2^8, whatever the quant range (as torch's {@code dst_nbins}). */
  private final int dstBins;
  protected float[] histogram;
  protected float minVal = Float.POSITIVE_INFINITY;
  protected float maxVal = Float.NEGATIVE_INFINITY;

  /** 2048 bins, upsample rate 128, per-tensor affine quint8 (torch's defaults). */
  public HistogramObserver() {
    this(DEFAULT_BINS, DEFAULT_UPSAMPLE_RATE, QScheme.perTensorAffine(QDType.QUINT8), false);
  }

  public HistogramObserver(int bins, int upsampleRate, QScheme scheme, boolean reduceRange) {
    super(requirePerTensor(scheme, "HistogramObserver"), reduceRange);
    this.bins = checkBins(bins, upsampleRate);
    this.upsampleRate = upsampleRate;
    this.dstBins = 256;
    this.histogram = new float[bins];
  }

  public HistogramObserver(int bins, int upsampleRate, QScheme scheme, int quantMin, int quantMax) {
    super(requirePerTensor(scheme, "HistogramObserver"), quantMin, quantMax);
    this.bins = checkBins(bins, upsampleRate);
    this.upsampleRate = upsampleRate;
    this.dstBins = 256;
    this.histogram = new float[bins];
  }

  private int checkBins(int bins, int upsampleRate) {
    String op = getClass().getSimpleName();
    if (bins < 1) throw new IllegalArgumentException(op + ": bins must be >= 1, got " + bins);
    if (upsampleRate < 1) throw new IllegalArgumentException(op + ": upsample_rate must be >= 1, got " + upsampleRate);
    if ((long) bins * upsampleRate > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(op + ": bins * upsample_rate must fit an int, got bins=" + bins
          + ", upsample_rate=" + upsampleRate);
    }
    return bins;
  }

  static QScheme requirePerTensor(QScheme s, String op) {
    if (s == null) throw new IllegalArgumentException(op + ": scheme must not be null");
    if (s.perChannel()) {
      throw new IllegalArgumentException(op + ": only per-tensor schemes are supported (as torch), got " + s);
    }
    return s;
  }

  /** Counts {@code x} into the running histogram (growing its range when needed) and returns {@code x}. */
  @Override
  public Tensor observe(Tensor x) {
    if (x.numel() == 0) return x;
    float[] v = x.toFloatArray();
    float lo = Float.POSITIVE_INFINITY;
    float hi = Float.NEGATIVE_INFINITY;
    for (float f : v) {
      if (!Float.isFinite(f)) {
        throw new IllegalArgumentException(getClass().getSimpleName() + ": input must be finite, got " + f
            + " in a tensor of shape " + java.util.Arrays.toString(x.shape()));
      }
      lo = Math.min(lo, f);
      hi = Math.max(hi, f);
    }
    boolean uninitialized = minVal == Float.POSITIVE_INFINITY && maxVal == Float.NEGATIVE_INFINITY;
    if (uninitialized || minVal == maxVal) { // torch starts over when everything so far was one value
      minVal = lo;
      maxVal = hi;
      histogram = histc(v, bins, lo, hi);
      return x;
    }
    float combinedMin = Math.min(lo, minVal);
    float combinedMax = Math.max(hi, maxVal);
    // _adjust_min_max: a common grid of sub-bins of width histBinWidth for the old and the new range (float32)
    float histBinWidth = (maxVal - minVal) / (float) ((long) bins * upsampleRate);
    double ratio = Math.ceil((combinedMax - combinedMin) / ((float) bins * histBinWidth));
    if (!(ratio >= 1 && ratio <= (double) Long.MAX_VALUE / bins)) {
      throw new IllegalArgumentException(getClass().getSimpleName() + ": the new range [" + combinedMin + ", "
          + combinedMax + "] is too wide to re-bin the old one [" + minVal + ", " + maxVal + "] into");
    }
    long downsampleRate = (long) ratio;
    float e = (float) downsampleRate * ((float) bins * histBinWidth) - (combinedMax - combinedMin);
    combinedMax = combinedMax + e; // relax only the max, so a one-sided range keeps its minimum
    long startIdx = (long) Math.rint((minVal - combinedMin) / histBinWidth);
    float[] combined = histc(v, bins, combinedMin, combinedMax);
    if (combinedMin == minVal && combinedMax == maxVal) {
      for (int i = 0; i < bins; i++) combined[i] += histogram[i];
    } else {
      combineHistograms(combined, histogram, downsampleRate, startIdx);
    }
    histogram = combined;
    minVal = combinedMin;
    maxVal = combinedMax;
    return x;
  }

  /**
   * torch.histc on float32 values: {@code bins} bins over {@code [lo, hi]} ({@code [v - 1, v + 1]} when
   * {@code lo == hi}), values outside skipped, the last bin closed on the right.
   */
  static float[] histc(float[] v, int bins, float lo, float hi) {
    float left = lo;
    float right = hi;
    if (left == right) {
      left = (float) ((double) lo - 1);
      right = (float) ((double) hi + 1);
    }
    float[] h = new float[bins];
    float width = right - left;
    for (float elt : v) {
      if (elt < left || right < elt) continue;
      long pos = (long) ((elt - left) * (float) bins / width);
      if (pos >= bins) pos = bins - 1;
      h[(int) pos] += 1;
    }
    return h;
  }

  /**
   * torch's _combine_histograms, without materializing the {@code bins * downsampleRate} sub-bins: the old histogram
   * repeated {@code upsampleRate} times from sub-bin {@code startIdx}, its running sum (float64) sampled at every
   * {@code downsampleRate}-th sub-bin, differenced against the previous sample rounded to float32, divided by the
   * upsample rate and added (float32) to {@code into}.
   */
  private void combineHistograms(float[] into, float[] old, long downsampleRate, long startIdx) {
    double[] integral = new double[bins];
    long regionEnd = startIdx + (long) bins * upsampleRate; // exclusive
    double running = 0;
    long p = startIdx; // next sub-bin to add
    for (int k = 0; k < bins; k++) {
      long sample = (k + 1L) * downsampleRate - 1;
      long until = Math.min(sample, regionEnd - 1);
      for (; p <= until; p++) running += old[(int) ((p - startIdx) / upsampleRate)];
      integral[k] = running;
    }
    float shifted = 0;
    for (int k = 0; k < bins; k++) {
      double interpolated = (integral[k] - (double) shifted) / upsampleRate;
      into[k] = into[k] + (float) interpolated;
      shifted = (float) integral[k];
    }
  }

  /**
   * The parameters of the sub-range found by the L2 search (see the class comment); scale 1 and zero point 0 before
   * anything was observed, as torch.
   */
  @Override
  public QParams calculateQParams() {
    if (minVal == Float.POSITIVE_INFINITY && maxVal == Float.NEGATIVE_INFINITY) {
      return qparams(new float[] {minVal}, new float[] {maxVal}, -1);
    }
    float[] r = searchRange();
    return qparams(new float[] {r[0]}, new float[] {r[1]}, -1);
  }

  /**
   * torch's {@code _non_linear_param_search}: the {@code {min, max}} the parameters are computed from.
   *
   * @throws IllegalStateException before anything was observed
   */
  public float[] searchRange() {
    requireObserved();
    float binWidth = (maxVal - minVal) / (float) bins;
    double sum = 0;
    float[] cSum = new float[bins]; // torch's CPU cumsum accumulates float32 in float64
    for (int i = 0; i < bins; i++) {
      sum += histogram[i];
      cSum[i] = (float) sum;
    }
    double total = (float) sum;
    double stepsize = 1e-5;
    double alpha = 0;
    double beta = 1;
    int startBin = 0;
    int endBin = bins - 1;
    double normMin = Double.POSITIVE_INFINITY;
    while (alpha < beta) {
      double nextAlpha = alpha + stepsize;
      double nextBeta = beta - stepsize;
      float lowTarget = (float) (nextAlpha * total); // torch compares a float32 element with the scalar in float32
      float highTarget = (float) (nextBeta * total);
      int l = startBin;
      int r = endBin;
      while (l < endBin && cSum[l] < lowTarget) l++;
      while (r > startBin && cSum[r] > highTarget) r--;
      int nextStartBin = startBin;
      int nextEndBin = endBin;
      if ((l - startBin) > (endBin - r)) {
        nextStartBin = l;
        alpha = nextAlpha;
      } else {
        nextEndBin = r;
        beta = nextBeta;
      }
      if (nextStartBin == startBin && nextEndBin == endBin) continue;
      double norm = quantizationError(nextStartBin, nextEndBin);
      if (norm > normMin) break;
      normMin = norm;
      startBin = nextStartBin;
      endBin = nextEndBin;
    }
    return new float[] {minVal + binWidth * (float) startBin, minVal + binWidth * (float) (endBin + 1)};
  }

  /**
   * torch's {@code _compute_quantization_error}: the L2 error of quantizing the histogram's density, uniform within
   * each bin, into {@code 256} levels spread over bins {@code startBin..endBin} (float32 per bin as torch, summed in
   * float64).
   */
  double quantizationError(int startBin, int endBin) {
    double binWidth = ((double) maxVal - (double) minVal) / bins;
    double dstBinWidth = binWidth * (endBin - startBin + 1) / dstBins;
    if (dstBinWidth == 0.0) return 0.0;
    float bw = (float) binWidth;
    float dbw = (float) dstBinWidth;
    float halfDbw = (float) (dstBinWidth / 2);
    float negHalfDbw = (float) (-dstBinWidth / 2);
    float lastLevel = dstBins - 1;
    // the middle bins' norm: density * ((dbw/2)^3 - (-dbw/2)^3) / 3 with 0-dim float32 operands
    float fullCube = (halfDbw * halfDbw * halfDbw - negHalfDbw * negHalfDbw * negHalfDbw) / 3f;
    double total = 0;
    for (int i = 0; i < bins; i++) {
      float srcBegin = (float) (i - startBin) * bw;
      float srcEnd = srcBegin + bw;
      float dstOfBegin = Math.min(Math.max(floorDiv(srcBegin, dbw), 0f), lastLevel);
      float dstOfBeginCenter = (dstOfBegin + 0.5f) * dbw;
      float dstOfEnd = Math.min(Math.max(floorDiv(srcEnd, dbw), 0f), lastLevel);
      float density = histogram[i] / bw;
      float norm = 0f;
      float deltaBegin = srcBegin - dstOfBeginCenter;
      norm += density * ((halfDbw * halfDbw * halfDbw - deltaBegin * deltaBegin * deltaBegin) / 3f);
      norm += (dstOfEnd - dstOfBegin - 1f) * (density * fullCube);
      float dstOfEndCenter = dstOfEnd * dbw + halfDbw;
      float deltaEnd = srcEnd - dstOfEndCenter;
      norm += density * ((deltaEnd * deltaEnd * deltaEnd - negHalfDbw * negHalfDbw * negHalfDbw) / 3f);
      total += norm;
    }
    return total;
  }

  /** torch's float floor division ({@code torch.div(a, b, rounding_mode='floor')} on CPU). */
  static float floorDiv(float a, float b) {
    if (b == 0) return a / b;
    float mod = a % b;
    float div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1f;
    float floordiv;
    if (div != 0) {
      floordiv = (float) Math.floor(div);
      if (div - floordiv > 0.5f) floordiv += 1f;
    } else {
      floordiv = Math.copySign(0f, a / b);
    }
    return floordiv;
  }

  protected final void requireObserved() {
    if (minVal == Float.POSITIVE_INFINITY && maxVal == Float.NEGATIVE_INFINITY) {
      throw new IllegalStateException(getClass().getSimpleName() + ": nothing observed yet; call observe first");
    }
  }

  /** The counts per bin (a copy; fractional after the range grew). */
  public float[] histogram() {
    return histogram.clone();
  }

  public int bins() {
    return bins;
  }

  public int upsampleRate() {
    return upsampleRate;
  }

  /** The histogram's lower edge (+infinity before anything was observed). */
  public float minVal() {
    return minVal;
  }

  /** The histogram's upper edge (-infinity before anything was observed); may exceed the largest value seen. */
  public float maxVal() {
    return maxVal;
  }
}
