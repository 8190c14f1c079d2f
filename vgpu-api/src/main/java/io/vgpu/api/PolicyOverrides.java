package io.vgpu.api;

import java.util.Objects;

/**
 * A pod's own choice of placement policy, overriding the scheduler's defaults. Empty strings mean "use
 * the default".
 *
 * @param nodePolicy node-level policy ({@code hami.io/node-scheduler-policy}: {@code binpack} or
 *     {@code spread})
 * @param devicePolicy device-level policy ({@code hami.io/gpu-scheduler-policy}: {@code binpack},
 *     {@code spread}, {@code mutex}, {@code numa}, a comma chain, or the name of a registered placement
 *     policy such as {@code fgd}, which then decides the node as well)
 * @param weights device-score weights ({@code hami.io/device-scoring-weights})
 */
public record PolicyOverrides(String nodePolicy, String devicePolicy, ScoringWeights weights) {

  /** No override. */
  public static final PolicyOverrides NONE = new PolicyOverrides("", "", ScoringWeights.DEFAULT);

  /** Validates the fields. */
  public PolicyOverrides {
    Objects.requireNonNull(nodePolicy, "nodePolicy");
    Objects.requireNonNull(devicePolicy, "devicePolicy");
    Objects.requireNonNull(weights, "weights");
  }
}
