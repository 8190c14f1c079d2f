package io.vgpu.bench.placement;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.core.Engine;
import io.vgpu.core.EngineConfig;
import io.vgpu.core.policy.BestFitPolicy;
import io.vgpu.core.policy.FgdPolicy;
import io.vgpu.core.policy.RandomPolicy;
import io.vgpu.core.policy.VgpuPolicy;
import java.util.ArrayList;
import java.util.List;

/** The policies the benchmark can run, by the names the engine registers them under. */
final class PolicyCatalog {
  /** Every policy name, in the order reports list them. */
  static final List<String> NAMES = List.of("random", "binpack", "spread", "bestfit", "fgd", "vgpu");

  private PolicyCatalog() {}

  /** How to make one run's policy: from the prepared trace and the run's own seed. */
  @FunctionalInterface
  interface Factory {
    PlacementPolicy create(PreparedTrace trace, long seed);
  }

  /**
   * A policy the benchmark runs.
   *
   * @param name its name
   * @param deterministic whether its score is a function of the node and the pod alone, so the
   *     simulator may remember it until the node changes
   * @param factory makes a fresh instance for one run
   */
  record Entry(String name, boolean deterministic, Factory factory) {}

  /**
   * Parses a comma-separated list of policy names.
   *
   * @throws BenchInputException naming the unknown name
   */
  static List<Entry> parse(String list) {
    List<Entry> out = new ArrayList<>();
    for (String part : list.split(",", -1)) {
      String name = part.trim();
      if (out.stream().anyMatch(e -> e.name().equals(name))) {
        continue;
      }
      out.add(entry(name));
    }
    return out;
  }

  static Entry entry(String name) {
    return switch (name) {
      case "random" -> new Entry(name, false, (trace, seed) -> new RandomPolicy(seed));
      case "binpack", "spread" -> new Entry(name, true, (trace, seed) -> hami(name));
      case "bestfit" -> new Entry(name, true, (trace, seed) -> new BestFitPolicy());
      case "fgd" -> new Entry(name, true, (trace, seed) -> new FgdPolicy(trace.typical()));
      case "vgpu" -> new Entry(name, true, (trace, seed) -> new VgpuPolicy(trace.typical(), trace.cardsByModel()));
      default ->
          throw new BenchInputException(
              "--policy value '" + name + "' is not a policy (known: " + String.join(", ", NAMES) + ")");
    };
  }

  /**
   * The policy annotations a pod carries to be placed by {@code name} in the deployed scheduler: {@code
   * hami.io/gpu-scheduler-policy} naming a registered policy, or for HAMi's {@code binpack} and {@code
   * spread} that and {@code hami.io/node-scheduler-policy}, both levels as the oracle run resolves them.
   *
   * @throws BenchInputException naming an unknown policy
   */
  static PolicyOverrides annotationsOf(String name) {
    entry(name);
    String nodePolicy = name.equals("binpack") || name.equals("spread") ? name : "";
    return new PolicyOverrides(nodePolicy, name, ScoringWeights.DEFAULT);
  }

  /**
   * HAMi's policy at both levels, exactly as the engine resolves it for a pod whose node and device
   * policies are {@code name}: the engine owns that policy, so the benchmark asks it for the instance.
   */
  private static PlacementPolicy hami(String name) {
    Engine engine =
        Engine.builder().loadPoliciesFromClassPath(false).config(EngineConfig.DEFAULT.withPolicies(name, name)).build();
    PodRequest probe = PodRequest.of(new PodRef("bench", "probe"), List.of(ContainerRequest.devices("main", 1)));
    return engine.compile(probe).policy();
  }
}
