package io.vgpu.k8s.config;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The node agent's memory watchdog (device-config key {@code watchdog}): every {@code pollInterval} it
 * reads from NVML what each container's processes hold on each card, and a container that holds more
 * than its grant plus {@code toleranceMiB} for {@code gracePeriod} or longer meets {@code action}.
 *
 * <p>The default tolerance, 512 MiB, is the size libvgpu.so books for a context before it has measured
 * one (vgpu-native README, "Context memory"): the one amount by which NVML's figure for a well-behaved
 * container can run ahead of what the interposer let it book (a context created while its size was
 * still being measured, driver memory NVML charges to a process that no allocation call returned).
 *
 * <p>A container of a pod that holds no grant (it bypassed the scheduler, or its grant does not verify)
 * is held to a grant of 0: past the tolerance for the grace period it meets {@code ungranted.action}.
 * Pods in {@code exemptNamespaces} (system daemons such as a metrics exporter) are never acted on.
 *
 * @param action what happens to a container over its grant
 * @param pollInterval how often NVML is read
 * @param gracePeriod how long a container may stay over its grant before the action
 * @param toleranceMiB how far above its grant NVML may see a container before it counts as over
 * @param ungrantedAction what happens to a container of a pod without a grant that uses a card
 * @param exemptNamespaces namespaces whose pods the watchdog never acts on
 */
public record WatchdogConfig(
    Action action, Duration pollInterval, Duration gracePeriod, long toleranceMiB, Action ungrantedAction, List<String> exemptNamespaces) {
  /** Poll at most this often: NVML's process list is not meant for a busy loop. */
  public static final Duration MIN_POLL_INTERVAL = Duration.ofMillis(50);
  /** Poll at least this often, and wait at most this long: a limit enforced later than this is none. */
  public static final Duration MAX_INTERVAL = Duration.ofMinutes(10);
  /** The largest tolerance: more than any GPU's memory. */
  public static final long MAX_TOLERANCE_MIB = 1L << 30;

  /** Kill, after 2 s over the grant plus 512 MiB (a grant of 0 without one), polling every second; nobody exempt. */
  public static final WatchdogConfig DEFAULT = new WatchdogConfig(Action.KILL, Duration.ofSeconds(1), Duration.ofSeconds(2), 512);

  /** Settings that kill ungranted use and exempt no namespace. */
  public WatchdogConfig(Action action, Duration pollInterval, Duration gracePeriod, long toleranceMiB) {
    this(action, pollInterval, gracePeriod, toleranceMiB, Action.KILL, List.of());
  }

  /** What the watchdog does with a container over its grant. */
  public enum Action {
    /** SIGKILL the container's processes on that card, record a Warning Event, count it. */
    KILL,
    /** Record a Warning Event and count it; the processes keep running. */
    REPORT;

    /** The device-config spelling: {@code kill} or {@code report}. */
    public String key() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * Validates the settings.
   *
   * @throws IllegalArgumentException naming the setting out of range
   */
  public WatchdogConfig {
    Objects.requireNonNull(action, "action");
    Objects.requireNonNull(pollInterval, "pollInterval");
    Objects.requireNonNull(gracePeriod, "gracePeriod");
    Objects.requireNonNull(ungrantedAction, "ungrantedAction");
    exemptNamespaces = List.copyOf(exemptNamespaces);
    if (pollInterval.compareTo(MIN_POLL_INTERVAL) < 0 || pollInterval.compareTo(MAX_INTERVAL) > 0) {
      throw new IllegalArgumentException("pollInterval " + GoDurations.format(pollInterval) + " is out of range [50ms, 10m]");
    }
    if (gracePeriod.isNegative() || gracePeriod.compareTo(MAX_INTERVAL) > 0) {
      throw new IllegalArgumentException("gracePeriod " + GoDurations.format(gracePeriod) + " is out of range [0, 10m]");
    }
    if (toleranceMiB < 0 || toleranceMiB > MAX_TOLERANCE_MIB) {
      throw new IllegalArgumentException("toleranceMiB " + toleranceMiB + " is out of range [0, " + MAX_TOLERANCE_MIB + "]");
    }
  }

  /** The same settings with {@code ungranted.action} and {@code exemptNamespaces} replaced. */
  public WatchdogConfig withUngranted(Action ungrantedAction, List<String> exemptNamespaces) {
    return new WatchdogConfig(action, pollInterval, gracePeriod, toleranceMiB, ungrantedAction, exemptNamespaces);
  }

  /** Whether the watchdog leaves the pods of {@code namespace} alone. */
  public boolean exempts(String namespace) {
    return exemptNamespaces.contains(namespace);
  }

  /** The tolerance in bytes. */
  public long toleranceBytes() {
    return toleranceMiB << 20;
  }
}
