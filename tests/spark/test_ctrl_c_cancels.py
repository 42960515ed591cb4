"""``ctrl_c_cancels``: Ctrl-C during a command's Spark jobs cancels them from a thread of its own
and ends the block in ``KeyboardInterrupt`` (the command then says it stopped). A stand-in for
the session records what is asked of it; a real Ctrl-C (SIGINT to this process) is the signal."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from kafka_epochs.spark.job import ctrl_c_cancels


class _Context:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.cancelled = threading.Event()

    def setLogLevel(self, level: str) -> None:  # (PySpark's name)
        self.asked.append(("setLogLevel", level))

    def cancelAllJobs(self) -> None:  # (PySpark's name)
        self.asked.append(("cancelAllJobs", threading.current_thread().name))
        self.cancelled.set()


class _Session:
    def __init__(self) -> None:
        self.sparkContext = _Context()  # (PySpark's name)


def _press_ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # (the handler runs in this thread at its next step)


def test_ctrl_c_cancels_the_jobs_elsewhere_and_the_failed_wait_becomes_keyboard_interrupt() -> None:
    spark = _Session()
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), ctrl_c_cancels(spark):  # type: ignore[arg-type]
        _press_ctrl_c()
        assert spark.sparkContext.cancelled.wait(10)  # no KeyboardInterrupt yet: the wait goes on
        raise RuntimeError("Job 1 cancelled as part of cancellation of all jobs")  # (what the wait raises)
    assert spark.sparkContext.asked == [("setLogLevel", "OFF"), ("cancelAllJobs", "ctrl-c")]
    assert signal.getsignal(signal.SIGINT) is before


def test_a_streaming_query_is_stopped_instead() -> None:
    spark = _Session()
    stopped = threading.Event()
    with pytest.raises(KeyboardInterrupt), ctrl_c_cancels(spark, stop=stopped.set):  # type: ignore[arg-type]
        _press_ctrl_c()
        assert stopped.wait(10)  # (the query's awaitTermination returns once it is stopped)
    assert spark.sparkContext.asked == [("setLogLevel", "OFF")]  # no job cancelled: the query stops its own


def test_ctrl_c_after_the_last_job_still_stops_the_command() -> None:
    spark = _Session()
    with pytest.raises(KeyboardInterrupt), ctrl_c_cancels(spark):  # type: ignore[arg-type]
        _press_ctrl_c()
        assert spark.sparkContext.cancelled.wait(10)


def test_a_second_ctrl_c_stops_waiting_at_once() -> None:
    spark = _Session()
    reached = []
    with pytest.raises(KeyboardInterrupt), ctrl_c_cancels(spark):  # type: ignore[arg-type]
        _press_ctrl_c()
        assert spark.sparkContext.cancelled.wait(10)
        _press_ctrl_c()
        reached.append("after the second")
    assert reached == []


def test_without_ctrl_c_errors_and_results_pass_as_they_are() -> None:
    spark = _Session()
    with pytest.raises(RuntimeError, match="the job failed"), ctrl_c_cancels(spark):  # type: ignore[arg-type]
        raise RuntimeError("the job failed")
    with ctrl_c_cancels(spark):  # type: ignore[arg-type]
        done = 1 + 1
    assert done == 2 and spark.sparkContext.asked == []


def test_off_the_main_thread_it_changes_nothing() -> None:
    spark = _Session()
    seen: list[object] = []

    def in_a_thread() -> None:
        with ctrl_c_cancels(spark):  # type: ignore[arg-type]
            seen.append(signal.getsignal(signal.SIGINT))

    before = signal.getsignal(signal.SIGINT)
    worker = threading.Thread(target=in_a_thread)
    worker.start()
    worker.join()
    assert seen == [before]
