import SofaCore
