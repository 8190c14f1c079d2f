package io.vgpu.nvidia;

import static io.vgpu.nvidia.internal.NvmlLayout.EVENT_COMPUTE_INSTANCE;
import static io.vgpu.nvidia.internal.NvmlLayout.EVENT_DATA;
import static io.vgpu.nvidia.internal.NvmlLayout.EVENT_GPU_INSTANCE;
import static io.vgpu.nvidia.internal.NvmlLayout.EVENT_SIZE;
import static io.vgpu.nvidia.internal.NvmlLayout.EVENT_TYPE;
import static io.vgpu.nvidia.internal.NvmlLayout.EVENT_XID_CRITICAL_ERROR;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import io.vgpu.nvidia.internal.NvmlHotCalls;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An NVML event set ({@code nvmlEventSet_t}) for Xid critical errors. Use it from one thread: {@link
 * #await} blocks in the driver, and {@link #close()} must not run while a wait is in progress.
 */
public final class NvmlEventSet implements AutoCloseable {
  private final NvmlCalls calls;
  private final Pointer set;
  private final AtomicBoolean closed = new AtomicBoolean();

  NvmlEventSet(NvmlCalls calls, Pointer set) {
    this.calls = calls;
    this.set = set;
  }

  /**
   * Registers the GPU's Xid critical errors.
   *
   * @throws NvmlException {@link NvmlError#NOT_SUPPORTED} when the GPU cannot report them (too old),
   *     or NVML's error, e.g. {@link NvmlError#GPU_IS_LOST}
   */
  public void registerXidEvents(NvmlDevice device) {
    LongByReference supported = new LongByReference();
    calls.call("nvmlDeviceGetSupportedEventTypes", device.toString(), () -> calls.api().nvmlDeviceGetSupportedEventTypes(device.handle(), supported));
    long types = EVENT_XID_CRITICAL_ERROR & supported.getValue();
    if (types == 0) {
      throw calls.failure("nvmlDeviceRegisterEvents", device.toString(), NvmlError.NOT_SUPPORTED.code());
    }
    calls.call("nvmlDeviceRegisterEvents", device.toString(), () -> calls.api().nvmlDeviceRegisterEvents(device.handle(), types, set));
  }

  /**
   * Waits for the next event of a registered GPU.
   *
   * @param timeoutMillis how long to wait
   * @return the event, or empty when none came in time
   * @throws NvmlException when the wait fails otherwise
   */
  public Optional<XidEvent> await(int timeoutMillis) {
    Memory data = new Memory(EVENT_SIZE);
    data.clear();
    int code = NvmlHotCalls.nvmlEventSetWait_v2(set, data, timeoutMillis);
    if (code == NvmlError.TIMEOUT.code()) {
      return Optional.empty();
    }
    calls.check("nvmlEventSetWait_v2", "", code);
    return Optional.of(new XidEvent(
        new NvmlDevice(calls, data.getPointer(0), "GPU of an event"),
        data.getLong(EVENT_TYPE),
        data.getLong(EVENT_DATA),
        data.getInt(EVENT_GPU_INSTANCE),
        data.getInt(EVENT_COMPUTE_INSTANCE)));
  }

  /** Frees the set once. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      calls.call("nvmlEventSetFree", "", () -> calls.api().nvmlEventSetFree(set));
    }
  }

  /**
   * An event.
   *
   * @param device the GPU it happened on
   * @param eventType the event's type bits ({@code 0x8} for an Xid critical error)
   * @param xid the Xid (the event's data)
   * @param gpuInstanceId the MIG GPU instance, or {@code 0xFFFFFFFF}
   * @param computeInstanceId the MIG compute instance, or {@code 0xFFFFFFFF}
   */
  public record XidEvent(NvmlDevice device, long eventType, long xid, int gpuInstanceId, int computeInstanceId) {
    /** Whether this is an Xid critical error, the only type vgpu registers. */
    public boolean isXidCriticalError() {
      return eventType == EVENT_XID_CRITICAL_ERROR;
    }
  }
}
