package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.spi.CardDemand;
import org.junit.jupiter.api.Test;

/** HAMi's request building (GenerateResourceRequests), rule by rule. */
class RequestResolverTest {
  private static final long UNSET = ContainerRequest.UNSET;
  private final RequestResolver hami = new RequestResolver(ResourceSchema.nvidia());

  private static ContainerRequest req(long count, long mem, long pct, long cores) {
    return new ContainerRequest("c", count, mem, pct, cores);
  }

  @Test
  void countOnlyTakesTheWholeCardAndNoCores() {
    assertThat(hami.resolve(req(1, UNSET, UNSET, UNSET))).isEqualTo(new CardDemand(1, 0, 100, 0));
  }

  @Test
  void explicitMemoryIsMiBPerCard() {
    assertThat(hami.resolve(req(2, 3000, UNSET, 30))).isEqualTo(new CardDemand(2, 3000, 0, 30));
  }

  @Test
  void memoryIsMultipliedByTheMemoryFactor() {
    RequestResolver doubled = new RequestResolver(ResourceSchema.nvidia().withMemoryFactor(2));
    assertThat(doubled.resolve(req(1, 1000, UNSET, UNSET)).memoryMiB()).isEqualTo(2000);
  }

  @Test
  void memoryFactorBelowOneActsAsOne() {
    RequestResolver zero = new RequestResolver(ResourceSchema.nvidia().withMemoryFactor(0));
    assertThat(zero.resolve(req(1, 1000, UNSET, UNSET)).memoryMiB()).isEqualTo(1000);
  }

  @Test
  void percentageIsKept() {
    assertThat(hami.resolve(req(1, UNSET, 25, UNSET))).isEqualTo(new CardDemand(1, 0, 25, 0));
  }

  @Test
  void percentageAbove100IsClamped() {
    assertThat(hami.resolve(req(1, UNSET, 150, UNSET)).memoryPercent()).isEqualTo(100);
    assertThat(hami.resolve(req(1, UNSET, 101, UNSET)).memoryPercent()).isEqualTo(100);
  }

  @Test
  void percentageZeroMeansUnsetSoTheWholeCardApplies() {
    assertThat(hami.resolve(req(1, UNSET, 0, UNSET))).isEqualTo(new CardDemand(1, 0, 100, 0));
  }

  @Test
  void explicitMemoryWinsOverPercentage() {
    assertThat(hami.resolve(req(1, 2048, 50, UNSET))).isEqualTo(new CardDemand(1, 2048, 0, 0));
  }

  @Test
  void zeroMemoryCountsAsUnset() {
    assertThat(hami.resolve(req(1, 0, UNSET, UNSET))).isEqualTo(new CardDemand(1, 0, 100, 0));
  }

  @Test
  void defaultMemoryAppliesWhenNeitherIsGiven() {
    RequestResolver withDefault = new RequestResolver(ResourceSchema.nvidia().withDefaults(1024, 0, 1));
    assertThat(withDefault.resolve(req(1, UNSET, UNSET, UNSET))).isEqualTo(new CardDemand(1, 1024, 0, 0));
    assertThat(withDefault.resolve(req(1, UNSET, 30, UNSET))).isEqualTo(new CardDemand(1, 0, 30, 0));
  }

  @Test
  void defaultCoresApplyOnlyWhenCoresAreUnset() {
    RequestResolver withDefault = new RequestResolver(ResourceSchema.nvidia().withDefaults(0, 10, 1));
    assertThat(withDefault.resolve(req(1, 100, UNSET, UNSET)).cores()).isEqualTo(10);
    assertThat(withDefault.resolve(req(1, 100, UNSET, 0)).cores()).isEqualTo(0);
  }

  @Test
  void coresAbove100AreClampedTo100() {
    assertThat(hami.resolve(req(1, 100, UNSET, 101)).cores()).isEqualTo(100);
  }

  @Test
  void noCountMeansNoDevice() {
    assertThat(hami.resolve(req(UNSET, 100, UNSET, 10))).isNull();
    assertThat(hami.resolve(req(0, 100, UNSET, 10))).isNull();
  }

  @Test
  void memoryBeyond31BitsAfterTheFactorIsRefused() {
    RequestResolver doubled = new RequestResolver(ResourceSchema.nvidia().withMemoryFactor(2));
    assertThatThrownBy(() -> doubled.resolve(req(1, 1_500_000_000L, UNSET, UNSET)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nvidia.com/gpumem 1500000000");
  }

  @Test
  void percentageResolvesAgainstTheScaledTotalWithIntegerDivision() {
    assertThat(new CardDemand(1, 0, 25, 0).memoryOn(40960)).isEqualTo(10240);
    assertThat(new CardDemand(1, 0, 33, 0).memoryOn(40959)).isEqualTo(13516);
    // 40960 MiB registered with deviceMemoryScaling 2 offers 81920: 25% of it is 20480.
    assertThat(new CardDemand(1, 0, 25, 0).memoryOn(81920)).isEqualTo(20480);
  }
}
