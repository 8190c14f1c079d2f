package io.vgpu.k8s.simulate;

import java.util.Locale;

/** Who schedules the pods written in KAI's dialect ({@code schedulerName: kai-scheduler}): a scenario's {@code stack}. */
public enum Stack {
  /** vgpu's own engine (the default). */
  VGPU,
  /** KAI Scheduler, with vgpu as the isolation layer under it. */
  KAI;

  /** The name written in a scenario. */
  public String key() {
    return name().toLowerCase(Locale.ROOT);
  }
}
