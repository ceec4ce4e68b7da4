package dev.ember.backend;

/**
 * One spatial axis of a pooling: output position {@code o} reads input positions
 * {@code start[o], start[o] + step, ...} below {@code end[o]} (already clipped to the input; an empty range
 * is possible only for odd dilated windows lying wholly in the padding). {@code div} holds the average's
 * divisor factor per output position (null for max pooling): the divisor of output (oh, ow) is
 * {@code h.div[oh] * w.div[ow]}.
 *
 * @param in input size along the axis
 * @param out output size along the axis
 * @param start first in-bounds tap per output position
 * @param end exclusive end of the taps per output position
 * @param step distance between taps (the dilation)
 * @param div divisor factor per output position, or null
 */
public record PoolAxis(int in, int out, int[] start, int[] end, int step, double[] div) {}
