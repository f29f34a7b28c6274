pub mod peers;
