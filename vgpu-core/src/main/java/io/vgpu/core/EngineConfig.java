package io.vgpu.core;

import io.vgpu.api.ResourceSchema;
import java.util.Objects;

/**
 * How an engine resolves requests and which policies it uses when a pod names none.
 *
 * @param schema the vendor's resource names and request defaults
 * @param nodePolicy the default node policy, {@code binpack} (HAMi's default) or {@code spread}
 * @param devicePolicy the default device policy, {@code spread} (HAMi's default), {@code binpack},
 *     {@code mutex}, a chain such as {@code binpack,numa}, or the name of a registered placement policy
 *     such as {@code fgd}, which then decides both levels
 */
public record EngineConfig(ResourceSchema schema, String nodePolicy, String devicePolicy) {

  /** HAMi's defaults: the NVIDIA schema, node binpack, device spread. */
  public static final EngineConfig DEFAULT = new EngineConfig(ResourceSchema.nvidia(), "binpack", "spread");

  /** Validates the fields. */
  public EngineConfig {
    Objects.requireNonNull(schema, "schema");
    Objects.requireNonNull(nodePolicy, "nodePolicy");
    Objects.requireNonNull(devicePolicy, "devicePolicy");
  }

  /** Returns a copy with other default policies. */
  public EngineConfig withPolicies(String node, String device) {
    return new EngineConfig(schema, node, device);
  }

  /** Returns a copy with another schema. */
  public EngineConfig withSchema(ResourceSchema value) {
    return new EngineConfig(value, nodePolicy, devicePolicy);
  }
}
