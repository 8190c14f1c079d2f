package io.vgpu.k8s.simulate;

import io.vgpu.core.QuotaLimits;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.yaml.YamlList;
import io.vgpu.k8s.yaml.YamlMap;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A parsed scenario: a cluster with GPUs and a sequence of pod events (see {@code SCENARIO.md}).
 *
 * @param config the device configuration at the start
 * @param nodes the nodes in file order
 * @param quotas each namespace's device quota
 * @param events the events in file order
 * @param configWritten the {@code config} section as written, for programs that pass it on (the lab
 *     writes it into the device configuration its components read)
 * @param checks the {@code checks} section as written: expectations {@code vgpu lab} evaluates
 *     against its report; {@code vgpu simulate} does not read them
 * @param stack who schedules the pods written in KAI's dialect
 * @param queues the KAI Queues that exist from the start, in file order
 */
public record Scenario(
    DeviceConfig config,
    List<NodeSpec> nodes,
    Map<String, QuotaLimits> quotas,
    List<ScenarioEvent> events,
    Optional<YamlMap> configWritten,
    Optional<YamlList> checks,
    Stack stack,
    List<ScenarioEvent.CreateQueue> queues) {

  /** Copies the collections. */
  public Scenario {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(configWritten, "configWritten");
    Objects.requireNonNull(checks, "checks");
    Objects.requireNonNull(stack, "stack");
    queues = List.copyOf(queues);
    nodes = List.copyOf(nodes);
    quotas = Collections.unmodifiableMap(new LinkedHashMap<>(quotas));
    events = List.copyOf(events);
  }
}
