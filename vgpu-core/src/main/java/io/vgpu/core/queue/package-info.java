/**
 * Queues as KAI Scheduler defines them ({@code scheduling.run.ai/v2 Queue}): a tree whose leaves take
 * pods, each queue with a quota, a limit and an over-quota weight per resource and a priority. This
 * package holds the immutable model, with KAI's defaults for absent fields, for embedding schedulers
 * that have no Kubernetes types.
 */
@NullMarked
package io.vgpu.core.queue;

import org.jspecify.annotations.NullMarked;
