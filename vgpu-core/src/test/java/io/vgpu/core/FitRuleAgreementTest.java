package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.DeviceConstraints;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** The scan's {@link FitRule#fits} is exactly {@code FitRule.refusals(...) == 0}, on every input. */
class FitRuleAgreementTest {
  private static final NodeState NODE = NodeState.unregistered("n", new CpuLedger().node("n"))
      .registeredAs(Fixtures.node("n", 1, 2));

  @Property(tries = 20_000)
  void theShortCircuitFormAgreesWithTheRefusalBits(
      @ForAll boolean healthy,
      @ForAll boolean cordoned,
      @ForAll boolean mutex,
      @ForAll @IntRange(min = 0, max = 3) int lists,
      @ForAll @IntRange(min = 0, max = 1) int card,
      @ForAll @IntRange(min = 0, max = 4) int split,
      @ForAll @IntRange(min = 0, max = 4) int sharers,
      @ForAll @IntRange(min = 0, max = 3) int totalMemStep,
      @ForAll @IntRange(min = 0, max = 3) int usedMemStep,
      @ForAll @IntRange(min = 0, max = 4) int memStep,
      @ForAll @IntRange(min = 0, max = 2) int totalCoresStep,
      @ForAll @IntRange(min = 0, max = 4) int usedCoresStep,
      @ForAll @IntRange(min = 0, max = 4) int coresStep) {
    int flags = (healthy ? NodeState.FLAG_HEALTHY : 0) | (cordoned ? NodeState.FLAG_CORDONED : 0) | (healthy && !cordoned ? NodeState.FLAG_SCHEDULABLE : 0);
    // Boundary values: equal, one below, one above; 100 cores is the exclusive-card rule.
    int totalMem = totalMemStep * 1000;
    int usedMem = Math.min(totalMem, usedMemStep * 1000);
    int mem = memStep * 500;
    int totalCores = new int[] {0, 100, 50}[totalCoresStep];
    int usedCores = Math.min(totalCores, new int[] {0, 30, 50, 100, 99}[usedCoresStep]);
    int cores = new int[] {0, 1, 50, 100, 70}[coresStep];
    DeviceConstraints constraints = new DeviceConstraints(
        (lists & 1) != 0 ? List.of("H100") : List.of(), List.of(),
        (lists & 2) != 0 ? List.of(Fixtures.uuid(1, 0)) : List.of(), List.of(), false, "");
    CardConstraints c = new CardConstraints(constraints, mutex);
    int typeId = NODE.data[card * NodeState.STRIDE + NodeState.TYPE];
    int refused = FitRule.refusals(c, NODE, card, flags, typeId, split, sharers, totalMem, usedMem, mem, totalCores, usedCores, cores);
    boolean fits = FitRule.fits(c, NODE, card, flags, typeId, split, sharers, totalMem, usedMem, mem, totalCores, usedCores, cores);
    assertThat(fits).as("refusals %s", Integer.toBinaryString(refused)).isEqualTo(refused == 0);
  }
}
