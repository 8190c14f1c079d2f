package io.vgpu.core;

import static io.vgpu.core.Fixtures.engine;
import static io.vgpu.core.Fixtures.gpu;
import static io.vgpu.core.Fixtures.pod;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ScoringWeights;
import org.junit.jupiter.api.Test;

/**
 * Policy names and weights come from pod annotations that tenants write: they are reduced to the
 * policies they mean before they key anything, and the cache of HAMi policies stays bounded whatever
 * values arrive.
 */
class PolicyCacheTest {
  private static PodRequest with(String node, String device, ScoringWeights weights) {
    return pod("p", gpu(1, 1000, 10)).withOverrides(new PolicyOverrides(node, device, weights));
  }

  @Test
  void unknownNamesMeanHamisDefaultsAndShareOneCachedPolicy() {
    Engine e = engine();
    CompiledRequest spread = e.compile(with("binpack", "spread", ScoringWeights.DEFAULT));
    for (String unknown : new String[] {"", "  ", "sprEAD", "topology-aware", "nonsense", " spread "}) {
      assertThat(e.compile(with("binpack", unknown, ScoringWeights.DEFAULT)).policy()).as(unknown).isSameAs(spread.policy());
    }
    // The node policy is spread only when it says so; anything else is binpack, as HAMi sorts.
    CompiledRequest binpackNodes = e.compile(with("binpack", "spread", ScoringWeights.DEFAULT));
    assertThat(e.compile(with("nonsense", "spread", ScoringWeights.DEFAULT)).policy()).isSameAs(binpackNodes.policy());
    assertThat(e.compile(with(" spread", "spread", ScoringWeights.DEFAULT)).policy().name()).isEqualTo("spread/spread");
    // A chain is its known keys in order, each once; unknown keys drop out.
    assertThat(e.compile(with("binpack", "binpack,foo,numa,binpack", ScoringWeights.DEFAULT)).policy())
        .isSameAs(e.compile(with("binpack", " binpack , numa", ScoringWeights.DEFAULT)).policy());
    assertThat(e.compile(with("binpack", "foo,bar", ScoringWeights.DEFAULT)).policy().name()).isEqualTo("binpack/spread,");
  }

  @Test
  void manyDistinctValuesDoNotGrowTheCache() {
    Engine e = engine();
    for (int i = 0; i < 20_000; i++) {
      e.compile(with("binpack-" + i, "x" + i + ",y" + i, ScoringWeights.DEFAULT));
      e.compile(with("spread", "spread", new ScoringWeights(1 + i, 1, 1)));
    }
    assertThat(e.cachedHamiPolicies()).isLessThanOrEqualTo(Engine.MAX_CACHED_HAMI_POLICIES);
    // Weights past the bound still place: the policy is made for the request, not cached.
    assertThat(e.compile(with("spread", "spread", new ScoringWeights(7, 7, 7))).policy().name()).isEqualTo("spread/spread");
  }
}
