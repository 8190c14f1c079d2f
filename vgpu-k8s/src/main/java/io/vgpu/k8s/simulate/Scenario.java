package io.vgpu.k8s.simulate;

import io.vgpu.core.QuotaLimits;
import io.vgpu.k8s.config.DeviceConfig;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A parsed scenario: a cluster with GPUs and a sequence of pod events (see {@code SCENARIO.md}).
 *
 * @param config the device configuration at the start
 * @param nodes the nodes in file order
 * @param quotas each namespace's device quota
 * @param events the events in file order
 */
public record Scenario(
    DeviceConfig config, List<NodeSpec> nodes, Map<String, QuotaLimits> quotas, List<ScenarioEvent> events) {

  /** Copies the collections. */
  public Scenario {
    Objects.requireNonNull(config, "config");
    nodes = List.copyOf(nodes);
    quotas = Collections.unmodifiableMap(new LinkedHashMap<>(quotas));
    events = List.copyOf(events);
  }
}
