package io.vgpu.k8s.scheduler;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * How many of the requested warm-up rounds this JVM can use. The rounds are for C2, which compiles a
 * method after thousands of calls and, on a small machine, works through its queue for as long as the
 * warm-up lasts. Where the JIT stops at C1 ({@code -XX:TieredStopAtLevel} 1 to 3, as the lab runs its
 * components) or there is none, a method is compiled after a couple of hundred calls or never, and
 * every round past {@value #WITHOUT_C2} only delays the listeners: 3,000 rounds took 11 s of a lab
 * scheduler's start, 600 take about 5. It also says how often a round sends its writes on this JVM.
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

  /**
   * One round in how many sends its writes on this JVM: every round, or every second one where it
   * trains or uses an ahead-of-time cache ({@code -XX:AOTCache}, {@code -XX:AOTCacheOutput} or {@code
   * -XX:AOTConfiguration}, JDK 25). Without a cache, C2 compiled the per-pod write path before the
   * listeners opened only when every round wrote (vgpu-bench/README.md, run AC's compilation log); what
   * that saves a steady pod is smaller than what the bench machine's speed moves the figure by (run
   * AD). Under the image's cache, which replays its training's profiles, the writes with another
   * warm-up change doubled the steady JIT in three pairs and the writes alone were even in two, so there
   * the old rate stays.
   */
  static int roundsPerWritingRound() {
    return roundsPerWritingRound(vmOption("AOTCache"), vmOption("AOTCacheOutput"), vmOption("AOTConfiguration"));
  }

  /**
   * As {@link #roundsPerWritingRound()}, from HotSpot's AOT flags (each empty where this JVM has no such
   * flag, as before JDK 24, or it is unset).
   */
  static int roundsPerWritingRound(Optional<String> aotCache, Optional<String> aotCacheOutput, Optional<String> aotConfiguration) {
    boolean cached = Stream.of(aotCache, aotCacheOutput, aotConfiguration).anyMatch(flag -> flag.filter(value -> !value.isBlank()).isPresent());
    return cached ? 2 : 1;
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
