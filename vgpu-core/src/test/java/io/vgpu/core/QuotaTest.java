package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.ResourceSchema;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Namespace quotas on limits.nvidia.com/gpumem and gpucores, checked at fit and at reserve. */
class QuotaTest {

  private static PodRequest inNamespace(String ns, String name, ContainerRequest c) {
    return PodRequest.of(new PodRef(ns, name), List.of(c));
  }

  @Test
  void quotaCountsResolvedMemoryAndCores() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    e.setQuota("team-a", new QuotaLimits(20000, 200));
    place(e, inNamespace("team-a", "a", gpu(2, 4000, 30)));
    QuotaUsage usage = e.quota("team-a");
    assertThat(usage.usedMemoryMiB()).isEqualTo(8000);
    assertThat(usage.usedCores()).isEqualTo(60);
  }

  @Test
  void percentagePodWaitsOnQuotaAndFitsOnceMemoryIsFreed() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    e.setQuota("team-a", new QuotaLimits(20000, QuotaLimits.UNLIMITED));
    place(e, inNamespace("team-a", "holder", gpu(1, 15000, 0)));
    // 25% of 40960 = 10240 MiB; 15000 + 10240 > 20000.
    PodRequest percent = inNamespace("team-a", "pct", new ContainerRequest("c", 1, ContainerRequest.UNSET, 25, 0));
    FilterResult blocked = e.filter(e.compile(percent), null, true);
    assertThat(blocked.placement()).isEmpty();
    assertThat(blocked.rejections().get(0).counts()).isEqualTo(Map.of(FitReason.RESOURCE_QUOTA_NOT_FIT, 1));
    e.release(new PodRef("team-a", "holder"));
    assertThat(place(e, percent).containers().get(0).devices().get(0).memoryMiB()).isEqualTo(10240);
  }

  @Test
  void coreQuotaBlocks() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    e.setQuota("team-a", new QuotaLimits(QuotaLimits.UNLIMITED, 50));
    place(e, inNamespace("team-a", "a", gpu(1, 100, 40)));
    assertThat(e.filter(e.compile(inNamespace("team-a", "b", gpu(1, 100, 20))), null, false).placement()).isEmpty();
    assertThat(e.filter(e.compile(inNamespace("team-b", "b", gpu(1, 100, 20))), null, false).placement()).isPresent();
  }

  @Test
  void aZeroLimitThatIsSetBlocksEverything() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    e.setQuota("team-a", new QuotaLimits(0, QuotaLimits.UNLIMITED));
    assertThat(e.filter(e.compile(inNamespace("team-a", "a", gpu(1, 1, 0))), null, false).placement()).isEmpty();
  }

  @Test
  void memoryLimitIsScaledByTheMemoryFactor() {
    Engine e = Engine.builder().loadPoliciesFromClassPath(false).config(EngineConfig.DEFAULT.withSchema(ResourceSchema.nvidia().withMemoryFactor(2))).build();
    e.upsertNode(node("n1", 0, 1));
    e.setQuota("team-a", new QuotaLimits(10000, QuotaLimits.UNLIMITED));
    // gpumem 9000 x factor 2 = 18000 MiB, within 10000 x 2.
    place(e, inNamespace("team-a", "a", gpu(1, 9000, 0)));
    assertThat(e.filter(e.compile(inNamespace("team-a", "b", gpu(1, 1100, 0))), null, false).placement()).isEmpty();
  }

  @Test
  void reserveReChecksTheQuota() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    e.setQuota("team-a", new QuotaLimits(10000, QuotaLimits.UNLIMITED));
    var first = e.filter(e.compile(inNamespace("team-a", "a", gpu(1, 6000, 0))), null, false).placement().orElseThrow().grant();
    var second = e.filter(e.compile(inNamespace("team-a", "b", gpu(1, 6000, 0))), null, false).placement().orElseThrow().grant();
    assertThat(e.reserve(first).reserved()).isTrue();
    ReserveResult refused = e.reserve(second);
    assertThat(refused.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(refused.message()).contains("namespace team-a quota exceeded");
    assertThat(e.quota("team-a").usedMemoryMiB()).isEqualTo(6000);
  }

  @Test
  void multiContainerPodsCountTheirHypotheticalTotal() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    e.setQuota("team-a", new QuotaLimits(10000, QuotaLimits.UNLIMITED));
    // two containers of 6000 each: the second one's card would take the pod to 12000.
    PodRequest twoContainers = PodRequest.of(new PodRef("team-a", "p"), List.of(new ContainerRequest("a", 1, 6000, -1, 0), new ContainerRequest("b", 1, 6000, -1, 0)));
    FilterResult r = e.filter(e.compile(twoContainers), null, true);
    assertThat(r.placement()).isEmpty();
    assertThat(r.rejections().get(0).counts()).isEqualTo(Map.of(FitReason.RESOURCE_QUOTA_NOT_FIT, 2));
  }

  @Test
  void liftingTheQuotaUnblocks() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    e.setQuota("team-a", new QuotaLimits(100, QuotaLimits.UNLIMITED));
    PodRequest p = inNamespace("team-a", "a", gpu(1, 1000, 0));
    assertThat(e.filter(e.compile(p), null, false).placement()).isEmpty();
    e.setQuota("team-a", QuotaLimits.NONE);
    assertThat(e.filter(e.compile(p), null, false).placement()).isPresent();
  }
}
