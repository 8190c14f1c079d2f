package io.vgpu.k8s.scheduler;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.util.Optional;

/**
 * How many of the requested warm-up rounds this JVM can use. The rounds are for C2, which compiles a
 * method after thousands of calls and, on a small machine, works through its queue for as long as the
 * warm-up lasts. Where the JIT stops at C1 ({@code -XX:TieredStopAtLevel} 1 to 3, as the lab runs its
 * components) or there is none, a method is compiled after a couple of hundred calls or never, and
 * every round past {@value #WITHOUT_C2} only delays the listeners: 3,000 rounds took 11 s of a lab
 * scheduler's start, 600 take about 5.
 */
final class WarmUpRounds {
  /**
   * The most rounds run without C2: three times C1's threshold of 200 calls for what every round runs.
   * What only the refused rounds (one in ten) run is left to the first pods that are refused.
   */
  static final int WITHOUT_C2 = 600;

  private WarmUpRounds() {}

  /** {@code requested}, or {@value #WITHOUT_C2} where that is fewer and this JVM has no C2. */
  static int forThisJvm(int requested) {
    return forJit(requested, ManagementFactory.getCompilationMXBean() != null, vmOption("TieredCompilation"), vmOption("TieredStopAtLevel"));
  }

  /**
   * {@code requested}, or {@value #WITHOUT_C2} where that is fewer and the JIT these flags describe has
   * no C2.
   *
   * @param jit whether the JVM compiles at all ({@code -Xint} does not)
   * @param tieredCompilation HotSpot's {@code TieredCompilation}, empty on a JVM without it
   * @param tieredStopAtLevel HotSpot's {@code TieredStopAtLevel}, empty on a JVM without it
   */
  static int forJit(int requested, boolean jit, Optional<String> tieredCompilation, Optional<String> tieredStopAtLevel) {
    return hasC2(jit, tieredCompilation, tieredStopAtLevel) ? requested : Math.min(requested, WITHOUT_C2);
  }

  /**
   * Whether the flags leave C2 on. A JVM that does not say (not HotSpot) is taken to have an optimising
   * compiler, so that its rounds are not cut; without tiers ({@code -XX:-TieredCompilation}) HotSpot
   * compiles with C2 alone.
   */
  private static boolean hasC2(boolean jit, Optional<String> tieredCompilation, Optional<String> tieredStopAtLevel) {
    if (!jit) {
      return false;
    }
    if (!tieredCompilation.map(Boolean::parseBoolean).orElse(true)) {
      return true;
    }
    return tieredStopAtLevel.map(WarmUpRounds::level).orElse(4) >= 4;
  }

  private static int level(String value) {
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      return 4;
    }
  }

  private static Optional<String> vmOption(String name) {
    try {
      HotSpotDiagnosticMXBean hotSpot = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
      return hotSpot == null ? Optional.empty() : Optional.of(hotSpot.getVMOption(name).getValue());
    } catch (IllegalArgumentException | UnsupportedOperationException | SecurityException e) {
      return Optional.empty();
    }
  }
}
