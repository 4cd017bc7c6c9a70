"""What a board and a storage medium are, as data."""

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt


class _Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Board(_Profile):
    name: str = ""
    description: str
    arch: str = "aarch64"
    cores: PositiveInt
    clock_ghz: PositiveFloat
    ram_gib: PositiveFloat
    price_usd: float = Field(ge=0)
    idle_watts: PositiveFloat
    load_watts: PositiveFloat
    nic_mbps: PositiveFloat
    sysbench_events_per_s_4_threads: PositiveFloat | None = None
    sources: dict[str, str] = {}


class MediumOnBoard(_Profile):
    seq_read_mb_s: PositiveFloat
    seq_write_mb_s: PositiveFloat
    rand_read_iops: PositiveFloat
    rand_write_iops: PositiveFloat


class Storage(_Profile):
    name: str = ""
    description: str
    capacity_gb: PositiveFloat
    price_usd: float = Field(ge=0)
    on_board: dict[str, MediumOnBoard]
    sources: dict[str, str] = {}

    def figures_on(self, board: str) -> MediumOnBoard:
        """The medium's figures in this board, or its slowest known figures elsewhere.

        A medium never measured in this board gets the slowest known figures: an optimistic
        guess would make an emulated node faster than the real one.
        """
        if board in self.on_board:
            return self.on_board[board]
        return min(self.on_board.values(), key=lambda m: m.seq_read_mb_s)
