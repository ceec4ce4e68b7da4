/**
 * Data sets and loaders.
 *
 * <ul>
 *   <li>{@link dev.ember.data.Dataset} (indexed) and {@link dev.ember.data.IterableDataset}
 *       (streamed); {@link dev.ember.data.TensorDataset} holds samples as two stacked tensors and
 *       gathers batches in one pass; {@link dev.ember.data.Subset},
 *       {@link dev.ember.data.ConcatDataset} and {@link dev.ember.data.Datasets#randomSplit}
 *       combine them.</li>
 *   <li>{@link dev.ember.data.DataLoader}: batches per epoch from a
 *       {@link dev.ember.data.BatchConfig}, shuffled by (seed, epoch), optionally prefetched on
 *       worker threads, identical for any number of workers, resumable with
 *       {@code iterate(epoch, skipBatches)}.</li>
 *   <li>{@link dev.ember.data.Transform}s for images ({@link dev.ember.data.Normalize},
 *       {@link dev.ember.data.RandomCrop}, {@link dev.ember.data.RandomHorizontalFlip},
 *       {@link dev.ember.data.ToTensor}, {@link dev.ember.data.Compose}), drawing randomness only
 *       from the generator they are given.</li>
 *   <li>Readers that validate sizes before allocating and report a
 *       {@link dev.ember.data.DataFormatException} naming file and offset:
 *       {@link dev.ember.data.Idx} (MNIST's format, raw or gzip), {@link dev.ember.data.Csv},
 *       {@link dev.ember.data.NpyData} and {@link dev.ember.data.MappedNpyDataset} (NumPy), and
 *       {@link dev.ember.data.FashionMnist}, which finds, downloads and loads that data set.</li>
 * </ul>
 */
package dev.ember.data;
